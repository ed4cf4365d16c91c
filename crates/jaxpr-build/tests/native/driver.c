/* Calls a library built by `jaxpr build --emit native` with the calls of a
 * file written by tests/native.rs, and checks each outcome. Made to run
 * under valgrind: every input buffer is a malloc block of exactly its
 * bytes (a read past it is an invalid read), every output byte is read
 * (an unwritten one is an uninitialised value), outputs are freed, the
 * library is unloaded at the end (its cached blocks must be freed).
 *
 * usage: driver LIB NAME CALLS
 * CALLS: "JXCALLS1", u32 count, then per call:
 *   u8 expect (0 success, 1 error, 2 either), i64 inputs passed, i64 outputs
 *   passed, u8 inputs NULL, u8 outputs NULL, u32 arrays in the file, then per
 *   array: i32 dtype, i32 rank, i64 shape[8], u8 data NULL, u64 bytes, bytes.
 * Exit status: 0 every outcome as expected, 1 a mismatch, 2 usage or IO. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "library.h"

static FILE *in;

static void need(void *dst, size_t n) {
  if (n && fread(dst, 1, n, in) != n) {
    fprintf(stderr, "driver: truncated calls file\n");
    exit(2);
  }
}

static const int elem_size[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: driver LIB NAME CALLS\n");
    return 2;
  }
  entry_fn f;
  error_fn err;
  free_fn release;
  void *lib = load_library("driver", argv[1], argv[2], &f, &err, &release);
  if (!lib) {
    return 2;
  }
  in = fopen(argv[3], "rb");
  if (!in) {
    perror(argv[3]);
    return 2;
  }
  char magic[8];
  uint32_t count;
  need(magic, 8);
  if (memcmp(magic, "JXCALLS1", 8) != 0) {
    fprintf(stderr, "driver: not a calls file\n");
    return 2;
  }
  need(&count, 4);
  int bad = 0;
  unsigned long checksum = 0;
  for (uint32_t c = 0; c < count; c++) {
    uint8_t expect, in_null, out_null;
    int64_t n_in, n_out;
    uint32_t n_arrays;
    need(&expect, 1);
    need(&n_in, 8);
    need(&n_out, 8);
    need(&in_null, 1);
    need(&out_null, 1);
    need(&n_arrays, 4);
    jx_array *ins = calloc(n_arrays ? n_arrays : 1, sizeof(jx_array));
    for (uint32_t k = 0; k < n_arrays; k++) {
      uint8_t data_null;
      uint64_t bytes;
      need(&ins[k].dtype, 4);
      need(&ins[k].rank, 4);
      need(ins[k].shape, 64);
      need(&data_null, 1);
      need(&bytes, 8);
      void *data = malloc(bytes ? bytes : 1);
      need(data, bytes);
      if (data_null) {
        free(data);
        data = NULL;
      }
      ins[k].data = data;
    }
    /* Exactly the outputs passed: a write past them is an invalid write. */
    jx_array *outs = malloc((n_out > 0 ? n_out : 1) * sizeof(jx_array));
    for (int64_t j = 0; j < (n_out > 0 ? n_out : 1); j++) {
      outs[j].data = NULL;
      outs[j].dtype = -1;
      outs[j].rank = -1;
      memset(outs[j].shape, 0, sizeof outs[j].shape);
    }
    int32_t rc = f(in_null ? NULL : ins, n_in, out_null ? NULL : outs, n_out);
    if (rc == 0) {
      if (expect == 1) {
        printf("call %u: accepted, expected an error\n", c);
        bad = 1;
      }
      for (int64_t j = 0; j < n_out; j++) {
        if (outs[j].dtype < 0 || outs[j].dtype > 14 || outs[j].rank < 0 || outs[j].rank > 8 || !outs[j].data) {
          printf("call %u: output %lld not written\n", c, (long long)j);
          bad = 1;
          continue;
        }
        uint64_t n = 1;
        for (int r = 0; r < outs[j].rank; r++) n *= (uint64_t)outs[j].shape[r];
        const unsigned char *p = outs[j].data;
        for (uint64_t i = 0; i < n * elem_size[outs[j].dtype]; i++) checksum = checksum * 31 + p[i];
        release(outs[j].data);
      }
    } else {
      const char *msg = err();
      if (expect == 0) {
        printf("call %u: error, expected success: %s\n", c, msg);
        bad = 1;
      }
      if (!msg || !msg[0]) {
        printf("call %u: an error without a message\n", c);
        bad = 1;
      }
      for (int64_t j = 0; j < n_out; j++) {
        if (outs[j].data || outs[j].rank != -1) {
          printf("call %u: output %lld written by a failed call\n", c, (long long)j);
          bad = 1;
        }
      }
    }
    for (uint32_t k = 0; k < n_arrays; k++) free(ins[k].data);
    free(ins);
    free(outs);
  }
  fclose(in);
  /* A branch on every output byte: valgrind reports any left unwritten. */
  if (checksum == 0x5eed) printf("(checksum)\n");
  dlclose(lib);
  printf("%u calls\n", count);
  return bad;
}
