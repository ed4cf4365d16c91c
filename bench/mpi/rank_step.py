"""One MPI rank of bench/mpi/train_step.py: calls a native library built from
a sharded program STEPS times with the global inputs of a corpus case (after
WARMUP calls) and prints `rank R: MEDIAN_SECONDS MIN_SECONDS` per call.
Standard library only. usage: rank_step.py LIB NAME CASE.json WARMUP STEPS"""
import ctypes, json, os, statistics, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../crates/jaxpr-build/tests/native"))
from run import JxArray, load, pack  # noqa: E402

lib_path, name, case, warmup, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
f, err, free, _, n_out = load(lib_path, name, ctypes.RTLD_GLOBAL)
ex = json.load(open(case))["examples"][0]
keep = []
ins = (JxArray * len(ex["inputs"]))(*[pack(v, keep) for v in ex["inputs"]])
outs = (JxArray * n_out)()
times = []
for k in range(warmup + steps):
    t = time.perf_counter()
    if f(ins, len(ex["inputs"]), outs, n_out) != 0:
        sys.exit("rank %s: %s" % (os.environ.get("OMPI_COMM_WORLD_RANK"), err().decode()))
    dt = time.perf_counter() - t
    for j in range(n_out):
        free(outs[j].data)
    if k >= warmup:
        times.append(dt)
print("rank %s: %.9f %.9f" % (os.environ.get("OMPI_COMM_WORLD_RANK"), statistics.median(times), min(times)),
      flush=True)
