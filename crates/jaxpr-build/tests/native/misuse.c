/* Misuse of NAME_free, from C (tests/native.rs runs it under valgrind):
 * a pointer freed twice, the caller's own memory, an input, a pointer
 * inside an output, one just after an unmapped page and one on the stack
 * are each refused with a message for NAME_error, and neither corrupt the
 * library's memory nor abort: later calls return distinct outputs with the
 * right values, and nothing the caller owns is written. Then threads free
 * outputs that other threads made, all at once, and race to free the same
 * outputs: exactly one free of each succeeds.
 *
 * The library computes `b = a * 2` (f32[N], N * 4 bytes: above the block
 * cache's 64 KiB) and `c = -x` (f32[4]).
 *
 * usage: misuse LIB NAME
 * Exit status: 0 all held, 1 a check failed (the line says which), 2 usage. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define N 32768
#define THREADS 8
#define ROUNDS 40

#include "library.h"

static entry_fn f;
static error_fn err;
static free_fn release;
static int failed;

#define CHECK(c, ...)                                   \
  do {                                                  \
    if (!(c)) {                                         \
      printf("line %d: ", __LINE__);                    \
      printf(__VA_ARGS__);                              \
      printf("\n");                                     \
      failed = 1;                                       \
    }                                                   \
  } while (0)

static jx_array array(void *data, int64_t n) {
  jx_array a = {data, 11, 1, {n}};
  return a;
}

/* Calls the library on a = fill (N of them) and x = (fill, ...); the two
 * outputs, their values checked. */
static void call(float fill, jx_array out[2]) {
  float *a = malloc(N * sizeof(float));
  float x[4] = {fill, fill, fill, fill};
  for (int i = 0; i < N; i++) a[i] = fill;
  jx_array in[2] = {array(a, N), array(x, 4)};
  int32_t r = f(in, 2, out, 2);
  CHECK(r == 0, "call failed: %s", err());
  if (r == 0) {
    float *b = out[0].data, *c = out[1].data;
    CHECK(b != a && (void *)c != (void *)x, "an output is an input");
    for (int i = 0; i < N; i++) CHECK(b[i] == 2 * fill, "b[%d] = %g, not %g", i, b[i], 2 * fill);
    for (int i = 0; i < 4; i++) CHECK(c[i] == -fill, "c[%d] = %g, not %g", i, c[i], -fill);
  }
  free(a);
}

/* A failed call (a wrong input count), which sets this thread's message
 * to one that is not NAME_free's. */
static void reset(void) {
  jx_array out[2];
  CHECK(f(NULL, 7, out, 2) == 1, "a call with 7 inputs succeeded");
  CHECK(!strstr(err(), "not a live output"), "reset: %s", err());
}

static int refused(void) { return strstr(err(), "_free(") && strstr(err(), "not a live output"); }

/* Frees `p`, which must be refused (`refuse`) or accepted. */
static void free_expecting(void *p, int refuse, const char *what) {
  reset();
  release(p);
  if (refuse)
    CHECK(refused(), "%s: NAME_free did not refuse it (message: %s)", what, err());
  else
    CHECK(!refused(), "%s: NAME_free refused a live output: %s", what, err());
}

static void free_outputs(jx_array out[2]) {
  free_expecting(out[0].data, 0, "output b");
  free_expecting(out[1].data, 0, "output c");
}

/* Threads that free each other's outputs: each makes outputs and puts
 * them in a shared pool, and frees outputs it takes from the pool. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool[THREADS * ROUNDS * 2];
static int pooled;
static int made[THREADS];

static void *swap_outputs(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int k = 0; k < ROUNDS; k++) {
    jx_array out[2];
    call((float)(t * 1000 + k), out);
    pthread_mutex_lock(&pool_lock);
    pool[pooled++] = out[0].data;
    pool[pooled++] = out[1].data;
    /* Takes two made by another thread, when there are. */
    void *take[2] = {NULL, NULL};
    if (pooled >= 4) {
      take[0] = pool[0];
      take[1] = pool[1];
      memmove(pool, pool + 2, (pooled - 2) * sizeof pool[0]);
      pooled -= 2;
    }
    pthread_mutex_unlock(&pool_lock);
    for (int j = 0; j < 2; j++)
      if (take[j]) free_expecting(take[j], 0, "an output of another thread");
    made[t]++;
  }
  return NULL;
}

/* Races: every thread frees every pointer of `race`; the refusals each
 * thread saw are added to `refusals`. */
#define RACE 64
static void *race[RACE];
static int refusals;

static void *free_all(void *arg) {
  int t = (int)(intptr_t)arg, mine = 0;
  for (int k = 0; k < RACE; k++) {
    void *p = race[(k + t * 7) % RACE];
    reset();
    release(p);
    mine += refused();
  }
  pthread_mutex_lock(&pool_lock);
  refusals += mine;
  pthread_mutex_unlock(&pool_lock);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: misuse LIB NAME\n");
    return 2;
  }
  void *lib = load_library("misuse", argv[1], argv[2], &f, &err, &release);
  if (!lib) {
    return 2;
  }

  /* Freed twice: the second is refused, and the next two calls' outputs
   * are two blocks, each with its own values. */
  jx_array o[2], p[2], q[2];
  call(1, o);
  free_outputs(o);
  free_expecting(o[0].data, 1, "output b freed twice");
  free_expecting(o[1].data, 1, "output c freed twice");
  call(2, p);
  call(3, q);
  CHECK(p[0].data != q[0].data && p[1].data != q[1].data, "two live outputs share a block");
  for (int i = 0; i < N; i++) CHECK(((float *)p[0].data)[i] == 4, "the first output changed at %d", i);
  free_outputs(p);
  free_outputs(q);

  /* The caller's memory, with a word 64 bytes before the pointer that
   * reads as the capacity of a block the next call fits in: refused, and
   * never written. */
  char *mine = malloc(4 * N + 8192);
  char *fake = mine + 4096;
  memset(mine, 0x5a, 4 * N + 8192);
  *(int64_t *)(fake - 64) = 4 * N;
  free_expecting(fake, 1, "the caller's memory (a plausible capacity before it)");
  *(int64_t *)(fake - 64) = 0;
  free_expecting(fake, 1, "the caller's memory (a small capacity before it)");
  *(int64_t *)(fake - 64) = 0x5a5a5a5a5a5a5a5a;
  free_expecting(mine, 1, "the caller's malloc block");
  call(4, p);
  CHECK(p[0].data != fake, "the library adopted the caller's memory");
  for (int i = 0; i < 4 * N + 8192; i++)
    if (mine[i] != 0x5a) {
      CHECK(0, "the caller's memory was written at byte %d", i);
      break;
    }
  free(mine);

  /* An input, a pointer inside an output, the stack, and a pointer right
   * after an unmapped page (reading before it would fault). */
  float x[4] = {1, 2, 3, 4};
  jx_array in[2] = {array(malloc(4 * N), N), array(x, 4)};
  memset(in[0].data, 0, 4 * N);
  CHECK(f(in, 2, q, 2) == 0, "call failed: %s", err());
  free_expecting(in[0].data, 1, "an input");
  free_expecting(x, 1, "an input on the stack");
  free_expecting((char *)p[0].data + 4096, 1, "a pointer inside an output");
  free_expecting((char *)p[1].data + 4, 1, "a pointer inside a small output");
  long page = sysconf(_SC_PAGESIZE);
  char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(pages != MAP_FAILED, "mmap");
  munmap(pages, page);
  free_expecting(pages + page, 1, "a pointer after an unmapped page");
  munmap(pages + page, page);
  free_outputs(p);
  free_outputs(q);
  free(in[0].data);
  call(5, p);
  free_outputs(p);
  release(NULL);

  /* Threads freeing the outputs other threads made. */
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, swap_outputs, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (int k = 0; k < pooled; k++) free_expecting(pool[k], 0, "a pooled output");
  for (int t = 0; t < THREADS; t++) CHECK(made[t] == ROUNDS, "thread %d made %d", t, made[t]);

  /* Threads racing to free the same outputs: one free of each is taken. */
  for (int k = 0; k < RACE; k += 2) {
    call((float)k, p);
    race[k] = p[0].data;
    race[k + 1] = p[1].data;
  }
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, free_all, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  CHECK(refusals == (THREADS - 1) * RACE, "%d refusals, not %d", refusals, (THREADS - 1) * RACE);
  call(6, p);
  call(7, q);
  CHECK(p[0].data != q[0].data, "two live outputs share a block after the race");
  free_outputs(p);
  free_outputs(q);

  dlclose(lib);
  if (!failed) printf("misuse: all held\n");
  return failed;
}
