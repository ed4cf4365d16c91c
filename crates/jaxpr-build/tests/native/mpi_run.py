"""Runs a native library of a multi-device program on this MPI rank (one of
`mpirun -n N`) through ctypes on every example of a corpus case: the global
inputs in, the global outputs compared with JAX's. Standard library only
(the library initialises MPI itself). Usage: mpi_run.py LIB NAME CASE.json
Prints `rank R: ok` or `rank R: ...` for each failure; exit 0 when every
example matches, 3 when the library refused to run (its message printed)."""
import ctypes, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import JxArray, load, pack, unpack, close  # noqa: E402


def main():
    lib_path, name, case = sys.argv[1:4]
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")
    # Global: Open MPI's components, opened by libmpi, look its symbols up.
    f, err, free, _, n_out = load(lib_path, name, ctypes.RTLD_GLOBAL)
    bad = 0
    for k, ex in enumerate(json.load(open(case))["examples"]):
        keep = []
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
