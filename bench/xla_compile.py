"""Times XLA compiling `value_and_grad` of N unrolled transformer blocks (the
programs of `../shared/corpus/large/`, made by `gen_large.py` there), and
writes each program's jaxpr for `jaxpr build` to build.

For each N: `jax.jit(f).lower(...).compile()`, timed from the lowered
module (`.compile()` alone: the step `jaxpr build --emit native` does from
a jaxpr) and whole (tracing and lowering too), and the process's CPU time
during `.compile()`. Prints one line per size: `N EQUATIONS
COMPILE_SECONDS LOWER_AND_COMPILE_SECONDS JAXPR_PATH COMPILE_CPU_SECONDS`, the
compile time the median of RUNS compiles (each of a fresh `jit`, so no
cache is hit); with RUNS 0 only the jaxpr is written (times `nan`).

usage: python bench/xla_compile.py CORPUS_DIR OUT_DIR RUNS N [N ...]
"""
import statistics
import sys
import time

corpus, out_dir, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sizes = [int(a) for a in sys.argv[4:]]
sys.path.insert(0, f"{corpus}/jax")

import jax  # noqa: E402
from transformer_blocks import deep, arguments  # noqa: E402

# The persistent compilation cache would make later runs no compile at all.
jax.config.update("jax_enable_compilation_cache", False)

# One compile first, untimed, so that what a process sets up once (the
# backend, LLVM's targets) is not counted against the timed compiles, each
# of which may be a process's only one.
jax.jit(lambda v: v * 2.0).lower(1.0).compile()

for n in sizes:
    x, params = arguments(n)
    closed = jax.make_jaxpr(jax.value_and_grad(deep))(x, params)
    path = f"{out_dir}/transformer{n}_grad.jaxpr"
    with open(path, "w") as f:
        f.write(str(closed) + "\n")
    compiles, wholes, cpus = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        lowered = jax.jit(jax.value_and_grad(deep)).lower(x, params)
        t1 = time.perf_counter()
        c1 = time.process_time()
        lowered.compile()
        t2 = time.perf_counter()
        cpus.append(time.process_time() - c1)
        compiles.append(t2 - t1)
        wholes.append(t2 - t)
    median = (lambda xs: f"{statistics.median(xs):.3f}") if runs else (lambda xs: "nan")
    print(n, len(closed.jaxpr.eqns), median(compiles), median(wholes), path, median(cpus), flush=True)
