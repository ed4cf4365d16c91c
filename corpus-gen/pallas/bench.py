"""Per-call time of the corpus's Pallas kernels built natively by `jaxpr
build` (through the Python API, `jaxpr.build(f, *args)`), against, in the
same run and on the same inputs, `jax.jit` of the same `pallas_call` in
interpret mode (what a kernel author runs on CPU) and `jax.jit` of the
equivalent `jax.numpy` program (XLA's own fusion of it).

usage (jax 0.10.2 and the package from this tree):
  PYTHONPATH=wheel/python JAXPR_BIN=$PWD/target/release/jaxpr JAX_PLATFORMS=cpu \
    target/venv-trace/bin/python corpus-gen/pallas/bench.py [--quick]

Each row: a program at a size (the corpus's example, and a larger one where
the kernel's grid follows its input), the median of 7 runs of the per-call
time of each, and native's ratio to each anchor (below 1: native is
faster). Every native result is checked against jax.jit's first.
"""
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from folder import load  # noqa: E402


def references():
    """The `jax.numpy` program each kernel computes, by program name."""
    import jax
    import jax.numpy as jnp

    def layer_norm(x, w, b):
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + b

    def mha(q, k, v):
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k)
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(logits, axis=-1), v)

    return {
        "add": lambda x, y: x + y,
        "add_grid": lambda x, y: x + y,
        "matmul_blocked": lambda x, y: x @ y,
        "matmul_k_accumulate": lambda x, y: x @ y,
        "softmax": lambda x: jax.nn.softmax(x, axis=1),
        "softmax_ops": lambda x: jax.nn.softmax(x, axis=-1),
        "layer_norm": layer_norm,
        "rms_norm": lambda x, w: x * jax.lax.rsqrt(jnp.mean(x * x, axis=1, keepdims=True) + 1e-6) * w,
        "sum_reduce_when": lambda x: jnp.sum(x, axis=0, keepdims=True),
        "max_reduce_last": lambda x: jnp.max(x, axis=1, keepdims=True) * 2.0,
        "aliased": lambda x: x + 1.0,
        "flash_attention_reference": mha,
    }


def rng(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# Larger inputs for the kernels whose grid follows their input's rows (one
# block of 2 rows per grid point; the native build unrolls the grid).
LARGER = {
    "add": lambda: (rng(512, 512), rng(512, 512, seed=1)),
    "softmax": lambda: (rng(64, 512),),
    "layer_norm": lambda: (rng(64, 512), rng(1, 512, seed=1), rng(1, 512, seed=2)),
    "rms_norm": lambda: (rng(64, 512), rng(1, 512, seed=1)),
    "sum_reduce_when": lambda: (rng(64, 512),),
}


def per_call(fn, args, runs=7):
    """The median over `runs` of the per-call time of `fn(*args)` (seconds),
    each run as many calls as fill about 50 ms."""
    import jax

    jax.block_until_ready(fn(*args))
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < 0.02:
        jax.block_until_ready(fn(*args))
        n += 1
    calls = max(1, int(n * 2.5))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - t) / calls)
    return statistics.median(times)


def main():
    import jax
    import jaxpr

    jax.config.update("jax_enable_x64", False)
    progs = {p.name: p for p in load(os.path.join(HERE, "programs.py"), "pallas_programs").programs()}
    refs = references()
    quick = "--quick" in sys.argv
    print(f"jax {jax.__version__}, jaxpr {jaxpr.__version__ if hasattr(jaxpr, '__version__') else '(tree)'}; "
          "per-call time, median of 7 runs")
    print(f"{'program':28} {'inputs':>18} {'native':>10} {'interpret':>10} {'XLA jnp':>10} "
          f"{'/interpret':>10} {'/XLA':>7}")
    worse = []
    for name, ref in refs.items():
        p = progs.get(name)
        if p is None:
            continue
        sizes = [p.args_of] + ([] if quick or name not in LARGER else [LARGER[name]])
        for args_of in sizes:
            args = args_of()
            f = p.make()
            native = jaxpr.build(f, *args)
            want = np.asarray(jax.jit(f)(*args))
            got = np.asarray(native(*args))
            if not np.allclose(got, want, rtol=2e-5, atol=1e-5):
                raise SystemExit(f"{name}: the native result differs from jax.jit's")
            dev = [jax.device_put(a) for a in args]
            t_native = per_call(native, args)
            t_interp = per_call(jax.jit(f), dev)
            t_xla = per_call(jax.jit(ref), dev)
            shape = "x".join(str(d) for d in args[0].shape)
            print(f"{name:28} {shape:>18} {t_native * 1e6:8.1f}us {t_interp * 1e6:8.1f}us "
                  f"{t_xla * 1e6:8.1f}us {t_native / t_interp:10.3f} {t_native / t_xla:7.2f}")
            if t_native > t_xla:
                worse.append(f"{name} {shape}")
    print(f"native slower than XLA's jnp program: {len(worse)}" + (f" ({', '.join(worse)})" if worse else ""))


if __name__ == "__main__":
    main()
