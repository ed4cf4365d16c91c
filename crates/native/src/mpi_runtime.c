/* The MPI side of a native library built from a multi-device program
   (crates/native/src/mpi.rs emits the calls; docs/native.md, "MPI").

   Compiled with `mpicc` and linked into the library with libmpi: every
   function here is hidden, so each library keeps its own state (the
   communicator it was given and the groups split from it).

   Groups: the code generator numbers every group of devices a collective
   of the program runs over (a mesh's axes, in the order the collective
   names them) and passes, for each, every rank's colour and key; group 0
   is the whole communicator in rank order. They are split from the
   communicator once, by every rank in the same call (`jx_mpi_begin`, at
   the start of every call of the entry, before any collective), and kept
   until the communicator changes. */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))

static MPI_Comm caller_comm;
static int caller_comm_set = 0;
/* The groups and the communicator and table they were split from. */
static MPI_Comm *groups = NULL;
static int64_t num_groups = 0;
static MPI_Comm groups_of;
static const int32_t *groups_table = NULL;
static int rank_in_comm = 0;

static void finalize_at_exit(void) {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

/* NAME_set_communicator: the caller's communicator (a pointer to its
   MPI_Comm); NULL goes back to MPI_COMM_WORLD. */
HIDDEN int32_t jx_mpi_set_comm(const void *comm, char *err, int64_t len) {
  if (comm == NULL) {
    caller_comm_set = 0;
    return 0;
  }
  MPI_Comm c = *(const MPI_Comm *)comm;
  if (c == MPI_COMM_NULL) {
    snprintf(err, (size_t)len, "the communicator is MPI_COMM_NULL");
    return 1;
  }
  caller_comm = c;
  caller_comm_set = 1;
  return 0;
}

static void free_groups(void) {
  for (int64_t k = 0; k < num_groups; k++) MPI_Comm_free(&groups[k]);
  free(groups);
  groups = NULL;
  num_groups = 0;
}

/* Starts a call on this rank: MPI initialised (by the library if the
   caller has not), the communicator's size checked against the program's
   devices before anything is sent, the groups split. `colours` and `keys`
   hold `ngroups` rows of `devices` entries. */
HIDDEN int32_t jx_mpi_begin(int64_t devices, const char *mesh, int64_t ngroups,
                            const int32_t *colours, const int32_t *keys, char *err,
                            int64_t len) {
  int init = 0, done = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  if (done) {
    snprintf(err, (size_t)len, "MPI has been finalized: this library's program runs on MPI");
    return 1;
  }
  if (!init) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      snprintf(err, (size_t)len, "MPI_Init_thread failed");
      return 1;
    }
    atexit(finalize_at_exit);
  }
  MPI_Comm c = caller_comm_set ? caller_comm : MPI_COMM_WORLD;
  int size = 0, rank = 0;
  MPI_Comm_size(c, &size);
  MPI_Comm_rank(c, &rank);
  if ((int64_t)size != devices) {
    snprintf(err, (size_t)len,
             "the program's mesh (%s) has %lld devices but the communicator has %d ranks "
             "(this is rank %d): run it with `mpirun -n %lld`, or give it a communicator of "
             "%lld ranks (the library's _set_communicator)",
             mesh, (long long)devices, size, rank, (long long)devices, (long long)devices);
    return 1;
  }
  int same = 0;
  if (groups != NULL) {
    int cmp = MPI_UNEQUAL;
    MPI_Comm_compare(groups_of, c, &cmp);
    same = cmp == MPI_IDENT && groups_table == colours && num_groups == ngroups;
  }
  if (!same) {
    free_groups();
    groups = calloc((size_t)ngroups, sizeof(MPI_Comm));
    if (groups == NULL) {
      snprintf(err, (size_t)len, "out of memory for %lld MPI groups", (long long)ngroups);
      return 1;
    }
    for (int64_t k = 0; k < ngroups; k++) {
      if (MPI_Comm_split(c, colours[k * devices + rank], keys[k * devices + rank], &groups[k]) !=
          MPI_SUCCESS) {
        snprintf(err, (size_t)len, "MPI_Comm_split failed");
        return 1;
      }
      MPI_Comm_set_errhandler(groups[k], MPI_ERRORS_RETURN);
      num_groups = k + 1;
    }
    groups_of = c;
    groups_table = colours;
  }
  rank_in_comm = rank;
  return 0;
}

/* This rank in the communicator (the device's index in the mesh). */
HIDDEN int64_t jx_mpi_rank(void) { return rank_in_comm; }

static MPI_Datatype datatype(int32_t code) {
  switch (code) {
    case 0: return MPI_UINT8_T;
    case 1: return MPI_INT8_T;
    case 2: return MPI_INT16_T;
    case 3: return MPI_INT32_T;
    case 4: return MPI_INT64_T;
    case 5: return MPI_UINT8_T;
    case 6: return MPI_UINT16_T;
    case 7: return MPI_UINT32_T;
    case 8: return MPI_UINT64_T;
    case 11: return MPI_FLOAT;
    case 12: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

/* 0 sum, 1 max, 2 min. */
static MPI_Op operation(int32_t op) {
  switch (op) {
    case 1: return MPI_MAX;
    case 2: return MPI_MIN;
    default: return MPI_SUM;
  }
}

static int failed(int rc, const char *what, char *err, int64_t len) {
  if (rc == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  snprintf(err, (size_t)len, "%s: MPI failed: %s", what, text);
  return 1;
}

static int too_many(int64_t count, const char *what, char *err, int64_t len) {
  if (count <= INT_MAX) return 0;
  snprintf(err, (size_t)len, "%s: %lld elements exceed MPI's int count", what,
           (long long)count);
  return 1;
}

static int group(int64_t g, MPI_Comm *c, const char *what, char *err, int64_t len) {
  if (g < 0 || g >= num_groups) {
    snprintf(err, (size_t)len, "%s: MPI group %lld was not split (internal error)", what,
             (long long)g);
    return 1;
  }
  *c = groups[g];
  return 0;
}

HIDDEN int32_t jx_mpi_allreduce(int64_t g, int32_t dtype, int32_t op, const void *in, void *out,
                                int64_t count, const char *what, char *err, int64_t len) {
  MPI_Comm c;
  if (group(g, &c, what, err, len) || too_many(count, what, err, len)) return 1;
  return failed(MPI_Allreduce(in, out, (int)count, datatype(dtype), operation(op), c), what, err,
                len);
}

/* Every member's `bytes` into `out`, in the group's order. */
HIDDEN int32_t jx_mpi_allgather(int64_t g, const void *in, void *out, int64_t bytes,
                                const char *what, char *err, int64_t len) {
  MPI_Comm c;
  if (group(g, &c, what, err, len) || too_many(bytes, what, err, len)) return 1;
  return failed(MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, c), what, err,
                len);
}

/* `in` holds one block of `count` elements per member, in the group's
   order; `out` gets the sum of every member's block of this member. */
HIDDEN int32_t jx_mpi_reduce_scatter(int64_t g, int32_t dtype, const void *in, void *out,
                                     int64_t count, const char *what, char *err, int64_t len) {
  MPI_Comm c;
  if (group(g, &c, what, err, len) || too_many(count, what, err, len)) return 1;
  return failed(MPI_Reduce_scatter_block(in, out, (int)count, datatype(dtype), MPI_SUM, c), what,
                err, len);
}

/* `to[i]`/`from[i]`: the member member `i` sends to and receives from
   (-1: none; what no one sends is zeros, as `ppermute`). */
HIDDEN int32_t jx_mpi_permute(int64_t g, const int32_t *to, const int32_t *from, const void *in,
                              void *out, int64_t bytes, const char *what, char *err, int64_t len) {
  MPI_Comm c;
  if (group(g, &c, what, err, len) || too_many(bytes, what, err, len)) return 1;
  int me = 0;
  MPI_Comm_rank(c, &me);
  int dest = to[me] < 0 ? MPI_PROC_NULL : to[me];
  int src = from[me] < 0 ? MPI_PROC_NULL : from[me];
  if (src == MPI_PROC_NULL) memset(out, 0, (size_t)bytes);
  return failed(MPI_Sendrecv(in, (int)bytes, MPI_BYTE, dest, 0, out, (int)bytes, MPI_BYTE, src, 0,
                             c, MPI_STATUS_IGNORE),
                what, err, len);
}

/* `in` holds one chunk of `bytes` per member; `out` gets each member's
   chunk for this one, in the group's order. */
HIDDEN int32_t jx_mpi_alltoall(int64_t g, const void *in, void *out, int64_t bytes,
                               const char *what, char *err, int64_t len) {
  MPI_Comm c;
  if (group(g, &c, what, err, len) || too_many(bytes, what, err, len)) return 1;
  return failed(MPI_Alltoall(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, c), what, err,
                len);
}
