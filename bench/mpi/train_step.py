"""A sharded train step of the sharding corpus (default `fsdp_train_step`:
FSDP, all_gather of the parameters and reduce_scatter of the gradients by
the transpose, on a mesh of 8), natively under `mpirun -n 8` against
`jax.jit` on 8 host CPU devices, in one run:

- build: `jaxpr build --emit native` of the corpus jaxpr (wall time of the
  binary, MPI runtime object already cached) against XLA's `.compile()` of
  the lowered, partitioned module (`jax.jit(f).lower(*args)`, a fresh jit
  each run, the compilation cache off); medians of RUNS;
- per step: the median time of one call (after WARMUP), each rank timing its
  own calls and the slowest rank's median reported, against the median of
  `jax.jit(f)(*args)` with `block_until_ready`.

usage: target/venv-trace/bin/python bench/mpi/train_step.py JAXPR_BUILD [PROGRAM] [STEPS] [RUNS]
(the interpreter: `bash tests/trace/venv.sh jax 0.10.2`; Open MPI's mpirun on PATH)
"""
import os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import gzip, json, re, statistics, subprocess, sys, tempfile, time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(ROOT, "corpus-gen"))
from folder import load  # noqa: E402

builder = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "fsdp_train_step"
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5

import jax  # noqa: E402
jax.config.update("jax_enable_compilation_cache", False)
col = os.path.join(ROOT, f"tests/data/sharding/jax-{jax.__version__}")
jaxpr = os.path.join(col, name + ".jaxpr")
work = tempfile.mkdtemp(prefix="mpi-bench-")
lib = os.path.join(work, name + ".so")
case = os.path.join(work, name + ".json")
values = json.loads(gzip.open(os.path.join(col, "values.json.gz")).read())
json.dump({"examples": values[name]}, open(case, "w"))

# Build: the native library, RUNS times.
build_times = []
for _ in range(runs + 1):
    t = time.perf_counter()
    subprocess.run([builder, "build", jaxpr, "--emit", "native", "--name", name, "-o", lib],
                   check=True, capture_output=True)
    build_times.append(time.perf_counter() - t)
build_times = build_times[1:]  # the first also compiles the MPI runtime once

# XLA: the program as the corpus made it, compiled for 8 devices.
programs = load(os.path.join(ROOT, "corpus-gen/sharding/programs.py"), "sharding_programs")
fn, args = programs.PROGRAMS[name](programs.Api())
compile_times = []
jax.jit(lambda v: v * 2.0).lower(1.0).compile()  # the backend set up once, untimed
for _ in range(runs):
    # A fresh function each run: JAX caches what it compiled by function.
    lowered = jax.jit(lambda *a: fn(*a)).lower(*args)
    t = time.perf_counter()
    compiled = lowered.compile()
    compile_times.append(time.perf_counter() - t)
jitted = jax.jit(fn)
for _ in range(20):
    jax.block_until_ready(jitted(*args))
jax_times = []
for _ in range(steps):
    t = time.perf_counter()
    jax.block_until_ready(jitted(*args))
    jax_times.append(time.perf_counter() - t)

# Native: every rank times its own calls.
out = subprocess.run(["mpirun", "-n", "8", "--oversubscribe", "--allow-run-as-root",
                      "--mca", "mpi_yield_when_idle", "1",
                      "python3", os.path.join(HERE, "rank_step.py"), lib, name, case, "20", str(steps)],
                     capture_output=True, text=True, timeout=600)
# Ranks write concurrently: their reports may share a line.
ranks = re.findall(r"rank (\d+): ([0-9.]+) ([0-9.]+)", out.stdout)
if len(ranks) != 8:
    sys.exit("mpirun: %s%s" % (out.stdout, out.stderr))
native_step = max(float(r[1]) for r in ranks)

print(f"{name} (jax {jax.__version__}, 8 devices; {os.cpu_count()} cores)")
print(f"{'':28}{'native (MPI, 8 ranks)':>24}{'jax.jit (8 host devices)':>28}")
print(f"{'build / compile, median s':28}{statistics.median(build_times):>24.3f}"
      f"{statistics.median(compile_times):>28.3f}")
print(f"{'per step, median ms':28}{native_step * 1e3:>24.3f}{statistics.median(jax_times) * 1e3:>28.3f}")
print(f"(build: jaxpr build --emit native, whole binary; compile: .compile() of the lowered module; "
      f"per step: slowest rank's median of {steps} calls, jax's median of {steps})")
