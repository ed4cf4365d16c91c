/* Calls a library built by `jaxpr build --emit native` many times with the
 * same scalar inputs and prints its resident memory as it goes: a qubit,
 * register, device or output left behind by each call shows as growth.
 * Small enough to run under valgrind too (scripts/valgrind-native.sh).
 *
 * usage: calls LIB NAME CALLS EVERY [--fail] INPUT...
 *   INPUT: f64:X, i64:N or bool:0/1 (a scalar of that dtype)
 *   --fail: every call is expected to fail (with a message, no output)
 * Prints "calls N rss_kb R" after the first call and every EVERY calls, then
 * "N calls".
 * Exit status: 0 every call as expected, 1 otherwise, 2 usage or loading. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../crates/jaxpr-build/tests/native/library.h"

static const size_t elem_size[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmRSS:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  }
  if (f) fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: calls LIB NAME CALLS EVERY [--fail] INPUT...\n");
    return 2;
  }
  entry_fn entry;
  error_fn error;
  free_fn release;
  void *lib = load_library("calls", argv[1], argv[2], &entry, &error, &release);
  if (!lib) return 2;
  char sym[512];
  snprintf(sym, sizeof sym, "%s_num_outputs", argv[2]);
  int64_t (*num_outputs)(void) = (int64_t (*)(void))dlsym(lib, sym);
  if (!num_outputs) {
    fprintf(stderr, "calls: %s lacks %s\n", argv[1], sym);
    return 2;
  }
  long calls = atol(argv[3]), every = atol(argv[4]);
  int first = 5, fail = 0;
  if (argc > first && strcmp(argv[first], "--fail") == 0) {
    fail = 1;
    first++;
  }
  int n_in = argc - first;
  jx_array ins[64];
  union {
    double f64;
    int64_t i64;
    uint8_t b;
  } values[64];
  if (n_in > 64) return 2;
  for (int k = 0; k < n_in; k++) {
    const char *a = argv[first + k];
    memset(&ins[k], 0, sizeof ins[k]);
    ins[k].data = &values[k];
    if (strncmp(a, "f64:", 4) == 0) {
      values[k].f64 = atof(a + 4);
      ins[k].dtype = 12;
    } else if (strncmp(a, "i64:", 4) == 0) {
      values[k].i64 = atoll(a + 4);
      ins[k].dtype = 4;
    } else if (strncmp(a, "bool:", 5) == 0) {
      values[k].b = (uint8_t)atoi(a + 5);
      ins[k].dtype = 0;
    } else {
      fprintf(stderr, "calls: input `%s` is not f64:X, i64:N or bool:B\n", a);
      return 2;
    }
  }
  int64_t n_out = num_outputs();
  jx_array *outs = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof(jx_array));
  unsigned long checksum = 0;
  int bad = 0;
  for (long c = 1; c <= calls && !bad; c++) {
    int32_t rc = entry(ins, n_in, outs, n_out);
    if (rc != 0 && !fail) {
      printf("call %ld failed: %s\n", c, error());
      bad = 1;
    } else if (rc == 0 && fail) {
      printf("call %ld succeeded, expected a failure\n", c);
      bad = 1;
    }
    for (int64_t j = 0; rc == 0 && j < n_out; j++) {
      /* Read every output byte: under valgrind an unwritten one is reported. */
      const unsigned char *p = outs[j].data;
      size_t bytes = outs[j].dtype >= 0 && outs[j].dtype <= 14 ? elem_size[outs[j].dtype] : 0;
      for (int r = 0; r < outs[j].rank; r++) bytes *= (size_t)outs[j].shape[r];
      for (size_t i = 0; i < bytes; i++) checksum = checksum * 31 + p[i];
      release(outs[j].data);
    }
    if (rc != 0 && c == 1) printf("message: %s\n", error());
    if (c == 1 || (every > 0 && c % every == 0)) {
      printf("calls %ld rss_kb %ld\n", c, rss_kb());
      fflush(stdout);
    }
  }
  if (checksum == 0x5eed) printf("(checksum)\n");
  free(outs);
  dlclose(lib);
  if (!bad) printf("%ld calls\n", calls);
  return bad;
}
