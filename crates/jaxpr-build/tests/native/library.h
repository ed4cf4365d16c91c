/* What the C test programs (driver.c, misuse.c) share: the ABI's array,
 * the library's exported functions, and loading them. */
#ifndef JX_TEST_LIBRARY_H
#define JX_TEST_LIBRARY_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  void *data;
  int32_t dtype;
  int32_t rank;
  int64_t shape[8];
} jx_array;

typedef int32_t (*entry_fn)(const jx_array *, int64_t, jx_array *, int64_t);
typedef const char *(*error_fn)(void);
typedef void (*free_fn)(void *);

/* Opens the library at `path` and finds NAME, NAME_error and NAME_free;
 * NULL, said on stderr under `who`, when it cannot. */
static void *load_library(const char *who, const char *path, const char *name, entry_fn *entry,
                          error_fn *error, free_fn *release) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "%s: %s\n", who, dlerror());
    return NULL;
  }
  char sym[512];
  snprintf(sym, sizeof sym, "%s", name);
  *entry = (entry_fn)dlsym(lib, sym);
  snprintf(sym, sizeof sym, "%s_error", name);
  *error = (error_fn)dlsym(lib, sym);
  snprintf(sym, sizeof sym, "%s_free", name);
  *release = (free_fn)dlsym(lib, sym);
  if (!*entry || !*error || !*release) {
    fprintf(stderr, "%s: %s lacks its entry points\n", who, path);
    return NULL;
  }
  return lib;
}

#endif
