"""Runs a native library of a multi-device program on this MPI rank (one of
`mpirun -n N`) through ctypes on every example of a corpus case: the global
inputs in, the global outputs compared with JAX's. Standard library only
(the library initialises MPI itself). Usage: mpi_run.py LIB NAME CASE.json
Prints `rank R: ok` or `rank R: ...` for each failure; exit 0 when every
example matches, 3 when the library refused to run (its message printed).
With --shards (after CASE.json), the rank calls NAME_shards instead: it
passes its own block of each input (NAME_shards_block says which) and
compares the block it gets of each output with that block of JAX's."""
import ctypes, itertools, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import JxArray, load, pack, unpack, close  # noqa: E402


def block(v, start, extent):
    """The block of array `v` (the corpus's format) at `start` of `extent`."""
    shape = v["shape"]
    data = v["data"] if isinstance(v["data"], list) else [v["data"]]
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    ranges = [range(s, s + e) for s, e in zip(start, extent)]
    out = [data[sum(i * st for i, st in zip(ix, strides))] for ix in itertools.product(*ranges)]
    return {"dtype": v["dtype"], "shape": list(extent), "data": out}


def main():
    lib_path, name, case = sys.argv[1:4]
    shards = "--shards" in sys.argv[4:]
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")
    # Global: Open MPI's components, opened by libmpi, look its symbols up.
    lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
    f, err, free, _, n_out = load(lib_path, name, ctypes.RTLD_GLOBAL)
    where = None
    if shards:
        f, err, free = (getattr(lib, name + "_shards" + s) for s in ("", "_error", "_free"))
        f.restype = ctypes.c_int32
        f.argtypes = [ctypes.POINTER(JxArray), ctypes.c_int64, ctypes.POINTER(JxArray), ctypes.c_int64]
        err.restype = ctypes.c_char_p
        free.argtypes = [ctypes.c_void_p]
        at = getattr(lib, name + "_shards_block")
        at.restype = ctypes.c_int32
        at.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int32,
                       ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]
        me = int(os.environ["OMPI_COMM_WORLD_RANK"])

        def where(k, output, v):
            start, extent = (ctypes.c_int64 * 8)(), (ctypes.c_int64 * 8)()
            if at(me, k, output, start, extent) != 0:
                print("rank %s: %s_shards_block: %s" % (rank, name, lib[name + "_error"]()), flush=True)
                sys.exit(3)
            r = len(v["shape"])
            return block(v, list(start)[:r], list(extent)[:r])
    bad = 0
    for k, ex in enumerate(json.load(open(case))["examples"]):
        keep = []
        if where is not None:
            ex = {"inputs": [where(i, 0, v) for i, v in enumerate(ex["inputs"])],
                  "outputs": [where(j, 1, v) for j, v in enumerate(ex["outputs"])]}
        ins = (JxArray * max(len(ex["inputs"]), 1))(*[pack(v, keep) for v in ex["inputs"]])
        outs = (JxArray * max(n_out, 1))()
        rc = f(ins, len(ex["inputs"]), outs, n_out)
        if rc != 0:
            print("rank %s: example %d: returned %d: %s" % (rank, k, rc, err().decode()), flush=True)
            sys.exit(3)
        for j, want in enumerate(ex["outputs"]):
            dtype, shape, data = unpack(outs[j])
            wdata = want["data"] if isinstance(want["data"], list) else [want["data"]]
            if dtype != want["dtype"] or shape != want["shape"]:
                print("rank %s: example %d output %d: %s%s, expected %s%s"
                      % (rank, k, j, dtype, shape, want["dtype"], want["shape"]))
                bad += 1
            elif not all(close(x, y, dtype) for x, y in zip(data, wdata)):
                wrong = [i for i, (x, y) in enumerate(zip(data, wdata)) if not close(x, y, dtype)]
                print("rank %s: example %d output %d: %d of %d differ, first at %d: %s, expected %s"
                      % (rank, k, j, len(wrong), len(data), wrong[0], data[wrong[0]], wdata[wrong[0]]))
                bad += 1
            free(outs[j].data)
    print("rank %s: %s" % (rank, "ok" if not bad else "%d mismatches" % bad), flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
