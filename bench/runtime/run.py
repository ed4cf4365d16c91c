"""Run time of libraries built by `jaxpr build --emit native` against XLA on
CPU (`jax.jit` of the same program), case by case and size by size; prints
one Markdown table. Every run also compares both sides' outputs, so the
benchmark guards correctness too.

usage: python bench/runtime/run.py --jaxpr BIN --corpus DIR [--out DIR]
                                   [--cases a,b] [--budget S] [--no-single-thread]
                                   [--baseline BIN]
(in the oracle's Python, jax 0.10.2; `cargo bench --bench runtime` runs it.)

Our library is called through ctypes with its inputs prepared once; a call
includes input validation, the computation, allocating the outputs and
freeing them. XLA's call is `jax.block_until_ready(jitted(*args))` on
arguments already on the device, after compiling. Each time is the median of
5 batches of calls (after a warm-up call); the sides take turns batch by
batch, so the machine's load falls on all alike. Besides wall time each
side's CPU time per call is measured (ours: the calling thread's; XLA on
one core: its process's, all threads), which the load of other processes
inflates much less. XLA runs twice: with its
default thread pool in this process, and in a child process pinned to one
core (`taskset -c 0`, so its thread pools have one thread) with
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

CODES = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5,
         "uint16": 6, "uint32": 7, "uint64": 8, "float16": 9, "bfloat16": 10,
         "float32": 11, "float64": 12}
DTYPES = {v: np.dtype(k) for k, v in CODES.items() if k != "bfloat16"}
# tests/native.rs: relative tolerance by dtype (integers and bools exact).
RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2}


class JxArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 8)]


class Library:
    """A built library, called on numpy arrays."""

    def __init__(self, path, name):
        lib = ctypes.CDLL(path)
        self.f = getattr(lib, name)
        self.f.restype = ctypes.c_int32
        self.f.argtypes = [ctypes.POINTER(JxArray), ctypes.c_int64, ctypes.POINTER(JxArray), ctypes.c_int64]
        self.error = getattr(lib, name + "_error")
        self.error.restype = ctypes.c_char_p
        self.free = getattr(lib, name + "_free")
        self.free.argtypes = [ctypes.c_void_p]
        self.n_out = getattr(lib, name + "_num_outputs")()

    def prepare(self, arrays):
        """A call on `arrays` without conversions: (run, fetch)."""
        arrays = [np.asarray(a, order="C") for a in arrays]
        ins = (JxArray * max(len(arrays), 1))()
        for k, a in enumerate(arrays):
            ins[k].data = a.ctypes.data
            ins[k].dtype = CODES[a.dtype.name]
            ins[k].rank = a.ndim
            for j, d in enumerate(a.shape):
                ins[k].shape[j] = d
        outs = (JxArray * max(self.n_out, 1))()
        f, free, n_in, n_out = self.f, self.free, len(arrays), self.n_out

        def run():
            if f(ins, n_in, outs, n_out) != 0:
                raise RuntimeError(self.error().decode())
            for j in range(n_out):
                free(outs[j].data)

        def fetch():
            if f(ins, n_in, outs, n_out) != 0:
                raise RuntimeError(self.error().decode())
            res = []
            for j in range(n_out):
                o = outs[j]
                shape = tuple(o.shape[i] for i in range(o.rank))
                dt = DTYPES[o.dtype]
                n = math.prod(shape)
                buf = ctypes.string_at(o.data, n * dt.itemsize) if n else b""
                res.append(np.frombuffer(buf, dtype=dt).reshape(shape).copy())
                free(o.data)
            return res

        run.keep = (arrays, ins, outs)
        return run, fetch


class Timer:
    """Times one side: calls of `fn` in batches sized so that a batch takes
    about `budget / REPEATS` seconds (after a warm-up call). Each batch
    records wall time and CPU time (`clock`: this thread's for our
    single-threaded library, the process's for XLA, all its threads)."""

    def __init__(self, fn, budget, clock=time.thread_time):
        self.fn = fn
        self.clock = clock
        fn()
        t = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t, 1e-7)
        self.number = max(1, int(budget / REPEATS / once))
        self.times = []
        self.cpu = []

    def batch(self):
        t, c = time.perf_counter(), self.clock()
        for _ in range(self.number):
            self.fn()
        self.times.append((time.perf_counter() - t) / self.number)
        self.cpu.append((self.clock() - c) / self.number)

    def median(self):
        return statistics.median(self.times)

    def median_cpu(self):
        return statistics.median(self.cpu)


# Batches per side. The sides take turns, batch by batch, so that the load
# of the machine (other processes) falls on all of them alike.
REPEATS = 5


def mismatch(got, want):
    """None if `got` matches `want` as tests/native.rs compares; else a
    description. Floats: within rtol elementwise (atol rtol * 1e-3), or,
    where a sum of many products came out near zero and its rounding
    differs between two correct summation orders, within rtol of the
    output's largest magnitude (reported as `normwise`)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    rtol = RTOL.get(want.dtype.name)
    if rtol is None:
        return None if np.array_equal(got, want) else "integers differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    same_special = np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(g[np.isinf(w)], w[np.isinf(w)])
    if not same_special:
        return "NaN/inf differ"
    fin = np.isfinite(w)
    err = np.abs(g[fin] - w[fin])
    if np.all(err <= rtol * np.abs(w[fin]) + rtol * 1e-3):
        return None
    scale = np.max(np.abs(w[fin]), initial=0.0)
    worst = float(np.max(err / (np.abs(w[fin]) + rtol * 1e-3)))
    if np.all(err <= rtol * max(scale, 1e-3)):
        return f"normwise (max elementwise rel. error {worst:.1e})"
    return f"max rel. error {worst:.1e} > {rtol}"


def load_programs(corpus):
    sys.path.insert(0, os.path.join(corpus, "jax"))
    from programs_jax import PROGRAMS
    import cases
    return PROGRAMS, cases


def plan(corpus, only):
    """(case, size, jaxpr path, library name, XLA program, static args, inputs, jaxpr inputs, x64)."""
    programs, cases = load_programs(corpus)
    rows = []
    for name, sizes in cases.JAX.items():
        for label, makers in sizes:
            rows.append(dict(case=f"jax/{name}", size=label, jaxpr=os.path.join(here, "jaxprs", f"{name}.{label}.jaxpr"),
                             lib=f"{name}_{label}".replace("-", "_"), fn=programs[name][0], static=(),
                             makers=makers, inputs=lambda a: a, x64=False, reference=None))
    for name, (fn, static, sizes, reference) in cases.CATALYST.items():
        for label, makers, inputs in sizes:
            rows.append(dict(case=f"catalyst/{name}", size=label,
                             jaxpr=os.path.join(corpus, "catalyst", f"{name}.jaxpr"), lib=name, fn=fn, static=static,
                             makers=makers, inputs=inputs, x64=True, reference=reference))
    if only:
        rows = [r for r in rows if r["case"].split("/")[1] in only or r["case"] in only]
    return rows


def args_of(row):
    rng = np.random.default_rng(0)
    return [m(rng) for m in row["makers"]]


def xla_runner(row, args):
    """(seconds per call, outputs) of jax.jit of the row's program."""
    import jax
    jax.config.update("jax_enable_x64", row["x64"])
    static = row["static"]
    jitted = jax.jit(row["fn"], static_argnums=static)
    dargs = [int(a) if k in static else jax.device_put(a) for k, a in enumerate(args)]
    out = jax.block_until_ready(jitted(*dargs))
    return (lambda: jax.block_until_ready(jitted(*dargs))), [np.asarray(o) for o in jax.tree_util.tree_leaves(out)]


def xla_server(rows, budget):
    """Child mode (XLA on one core): reads commands from stdin, one JSON a
    line: `{"prepare": i}` compiles row i and warms it up, `{"batch": true}`
    times a batch of its calls; answers `{"seconds": s}` (per call)."""
    timer = None
    for line in sys.stdin:
        cmd = json.loads(line)
        if "prepare" in cmd:
            row = rows[cmd["prepare"]]
            run, _ = xla_runner(row, args_of(row))
            timer = Timer(run, budget, time.process_time)
            print(json.dumps({"ready": True}), flush=True)
        else:
            timer.batch()
            print(json.dumps({"seconds": timer.times[-1], "cpu": timer.cpu[-1]}), flush=True)


class Child:
    """XLA restricted to one core in a child process: pinned to core 0
    (its thread pools then have one thread) and with Eigen's
    multi-threading off."""

    def __init__(self, corpus, cases, budget):
        env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
        cmd = ["taskset", "-c", "0", sys.executable, os.path.abspath(__file__), "--corpus", corpus,
               "--budget", str(budget), "--xla-server"] + (["--cases", cases] if cases else [])
        self.p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.times = []

    def ask(self, cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit("the single-core XLA process died")
        return json.loads(line)

    def prepare(self, i):
        self.times, self.cpu = [], []
        self.ask({"prepare": i})

    def batch(self):
        r = self.ask({"batch": True})
        self.times.append(r["seconds"])
        self.cpu.append(r["cpu"])

    def median(self):
        return statistics.median(self.times)

    def median_cpu(self):
        return statistics.median(self.cpu)


def build(jaxpr_bin, row, out_dir, built):
    so = os.path.join(out_dir, f"lib{row['lib']}.so")
    if so not in built:
        r = subprocess.run([jaxpr_bin, "build", row["jaxpr"], "--emit", "native", "--name", row["lib"], "-o", so],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{row['case']} {row['size']}: build failed:\n{r.stderr}")
        built[so] = Library(so, row["lib"])
    return built[so]


def fmt(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def ratio(ours, xla):
    return "-" if xla is None else f"{ours / xla:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jaxpr", required=False)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "target", "bench-runtime"))
    ap.add_argument("--cases", default="")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of calls per measurement")
    ap.add_argument("--xla-server", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-single-thread", action="store_true", help="skip XLA pinned to one core")
    ap.add_argument("--baseline", help="another jaxpr-build binary: its library of each case is timed too, "
                    "batch by batch with the others, and compared with ours (wall and CPU)")
    a = ap.parse_args()
    only = set(filter(None, a.cases.split(",")))
    rows = plan(a.corpus, only)
    if a.xla_server:
        return xla_server(rows, a.budget)
    os.makedirs(a.out, exist_ok=True)
    load0 = open("/proc/loadavg").read().split()[:3]
    child = None if a.no_single_thread else Child(a.corpus, a.cases, a.budget)
    built = {}
    failures = []
    base_built = {}
    extra = " baseline | ours / baseline | CPU: baseline | CPU: ours / baseline |" if a.baseline else ""
    print("| case | size | ours | XLA (default threads) | ratio | XLA (1 core) | ratio "
          "| CPU: ours | CPU: XLA (1 core) | CPU ratio | outputs |" + extra)
    print("|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * (4 if a.baseline else 0))
    for i, row in enumerate(rows):
        lib = build(a.jaxpr, row, a.out, built)
        args = args_of(row)
        run, fetch = lib.prepare(row["inputs"](args))
        ours = fetch()
        sides = [Timer(run, a.budget)]
        if row["fn"] is not None:
            xla_run, want = xla_runner(row, args)
            sides.append(Timer(xla_run, a.budget, time.process_time))
            if child:
                child.prepare(i)
                sides.append(child)
        else:
            want = [np.asarray(w) for w in row["reference"](*args)]
        base = None
        if a.baseline:
            base_out = os.path.join(a.out, "baseline")
            os.makedirs(base_out, exist_ok=True)
            base_run, base_fetch = build(a.baseline, row, base_out, base_built).prepare(row["inputs"](args))
            if any(mismatch(g, w) for g, w in zip(base_fetch(), ours)):
                failures.append(f"{row['case']} {row['size']}: the baseline's outputs differ from ours")
            base = Timer(base_run, a.budget)
        for _ in range(REPEATS):
            for side in sides + ([base] if base else []):
                side.batch()
        t, xla, one = (sides[k].median() if k < len(sides) else None for k in range(3))
        cpu, one_cpu = sides[0].median_cpu(), (sides[2].median_cpu() if len(sides) > 2 else None)
        bad = [f"output {j}: {m}" for j, (g, w) in enumerate(zip(ours, want)) if (m := mismatch(g, w))]
        if len(ours) != len(want):
            bad.append(f"{len(ours)} outputs, expected {len(want)}")
        hard = [b for b in bad if "normwise" not in b]
        if hard:
            failures.append(f"{row['case']} {row['size']}: " + "; ".join(hard))
        check = "; ".join(bad) if bad else ("match" if xla is not None else "match (numpy; XLA cannot compile)")
        print(f"| {row['case']} | {row['size']} | {fmt(t)} | {fmt(xla)} | {ratio(t, xla)} | {fmt(one)} | "
              f"{ratio(t, one)} | {fmt(cpu)} | {fmt(one_cpu)} | {ratio(cpu, one_cpu)} | {check} |"
              + (f" {fmt(base.median())} | {t / base.median():.3f} | {fmt(base.median_cpu())} | "
                 f"{cpu / base.median_cpu():.3f} |" if base else ""), flush=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    print(f"\nload average before: {' '.join(load0)}, after: {' '.join(load1)} ({os.cpu_count()} cores)")
    if failures:
        print("\nMISMATCHES:\n" + "\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
