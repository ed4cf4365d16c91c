"""Quantum programs: the library `jaxpr build --emit native` makes against the
function Catalyst's `qjit` compiles, on the same program, in the same run.

For each case of corpus-gen/catalyst/programs.py named on the command line:
- Catalyst's compile time: a fresh `qjit` of the program's Python function,
  traced and compiled (`jit_compile`), timed;
- the build time: `jaxpr-build build NAME.jaxpr --emit native` (the jaxpr
  Catalyst printed for it, from tests/data/catalyst-suite), timed;
- per-call time: the qjit function called from Python, and the library
  called from Python through ctypes with its inputs prepared once, each the
  median of 5 batches of about 0.2 s, interleaved; the library's results are
  checked against qjit's first (to 1e-12, derivatives to 1e-9: Catalyst sums
  a circuit's partial derivatives in another order).

usage: python run.py --jaxpr-build BIN [--cases a,b,c]   (pennylane-catalyst 0.15.0)
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "corpus-gen", "catalyst"))
sys.path.insert(0, os.path.join(ROOT, "bench", "runtime"))

import catalyst  # noqa: E402
import jax  # noqa: E402
import programs  # noqa: E402
import run as ctypes_caller  # noqa: E402  (bench/runtime/run.py: the ctypes caller)
from run import Library  # noqa: E402

# Circuits' states and unitaries are complex (the runtime bench has no complex case).
ctypes_caller.CODES.update({"complex64": 13, "complex128": 14})
ctypes_caller.DTYPES.update({13: np.dtype("complex64"), 14: np.dtype("complex128")})

DEFAULT = ["expval_rx", "ctrl_rotation", "var_and_expval_hamiltonian", "multi_qubit_gates",
           "hamiltonian_expval", "adjoint_of_loop", "mid_circuit_loop", "sample_fixed_shots",
           "counts_and_expval_shots", "ghz_dynamic_wires",
           # gradients of circuits: the adjoint method (diff_method best and adjoint) and
           # parameter-shift (the circuit run twice more per gate parameter)
           "grad_of_circuit", "grad_argnums_adjoint", "jacobian_probs_parameter_shift",
           "grad_parameter_shift_argnums", "value_and_grad_parameter_shift_loop"]
BATCHES = 5
BUDGET = 0.2


def per_call(fns):
    """Median seconds per call of each of `fns`, their batches interleaved."""
    numbers = []
    for f in fns:
        f()
        t = time.perf_counter()
        f()
        numbers.append(max(1, int(BUDGET / max(time.perf_counter() - t, 1e-7))))
    times = [[] for _ in fns]
    for _ in range(BATCHES):
        for k, f in enumerate(fns):
            t = time.perf_counter()
            for _ in range(numbers[k]):
                f()
            times[k].append((time.perf_counter() - t) / numbers[k])
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxpr-build", required=True)
    ap.add_argument("--cases", default=",".join(DEFAULT))
    args = ap.parse_args()
    runtime = os.path.join(os.path.dirname(catalyst.__file__), "lib")
    out = tempfile.mkdtemp(prefix="jaxpr-quantum-bench-")
    print(f"pennylane-catalyst {catalyst.__version__}; {os.cpu_count()} cores (shared)")
    print()
    print("| program | Catalyst compile | jaxpr build | qjit call | library call (ctypes) | library / qjit |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.cases.split(","):
        fn, examples = programs.PROGRAMS[name]
        ex = tuple(np.asarray(a) if isinstance(a, np.ndarray) else a for a in examples[0])
        seed = fn.compile_options.seed
        # Catalyst: a fresh qjit of the same Python function, traced and compiled.
        t = time.perf_counter()
        fresh = catalyst.qjit(fn.original_function, seed=seed)
        fresh.jit_compile(ex)
        compile_s = time.perf_counter() - t
        jaxpr = os.path.join(ROOT, "tests", "data", "catalyst-suite", name + ".jaxpr")
        so = os.path.join(out, f"lib{name}.so")
        cmd = [args.jaxpr_build, "build", jaxpr, "--emit", "native", "-o", so, "--name", name,
               "--catalyst-runtime", runtime]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        build_s = time.perf_counter() - t
        lib = Library(so, name)
        # the jaxpr's inputs: its constants (the closed jaxpr's), then the
        # arguments (these programs have no leading implicit sizes)
        consts = [np.asarray(c) for c in fresh.jaxpr.consts]
        run, fetch = lib.prepare(consts + [np.asarray(a, dtype=np.float64 if isinstance(a, float) else None)
                                           for a in ex])
        want = [np.asarray(x) for x in jax.tree_util.tree_leaves(fresh(*ex))]
        got = fetch()
        derivative = "grad" in name or "jacobian" in name
        tolerance = 1e-9 if derivative else 1e-12
        for g, w in zip(got, want):
            if not np.allclose(g, w, rtol=tolerance, atol=tolerance):
                sys.exit(f"{name}: library {g} differs from qjit's {w}")
        qjit_s, lib_s = per_call([lambda: fresh(*ex), run])
        print(f"| {name} | {compile_s * 1e3:.0f} ms | {build_s * 1e3:.0f} ms | {qjit_s * 1e6:.1f} µs "
              f"| {lib_s * 1e6:.1f} µs | {lib_s / qjit_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
