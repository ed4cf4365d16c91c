"""The cases of the run-time benchmark: which program, at which sizes, on
which inputs. Shared by `gen.py` (writes the jaxprs) and `run.py` (times
them), so both see the same shapes.

A JAX case is a program of the corpus (`programs_jax.py`) traced with
`jax.make_jaxpr` at each size, as the corpus generator prints it: one jaxpr
a size (`jaxprs/NAME.SIZE.jaxpr`). A Catalyst case is the corpus's own
jaxpr: its shapes are dimension variables, so one jaxpr (one library)
serves every size; XLA runs `jax.jit` of the same program written in JAX
(Catalyst's `for_loop` is `fori_loop`), compiled again for each size.
"""
import numpy as np
import jax.numpy as jnp
from jax import lax


def f32(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def weight(*shape, fan_in=None):
    """A weight matrix scaled by 1/sqrt(fan_in), as networks are initialised:
    with unscaled weights a recurrent network is chaotic and any rounding
    difference grows until results disagree."""
    n = fan_in or shape[0]
    return lambda rng: (rng.standard_normal(shape) / np.sqrt(n)).astype(np.float32)


def f64(*shape):
    return lambda rng: rng.standard_normal(shape)


def i32(*shape, hi=10):
    return lambda rng: rng.integers(0, hi, size=shape).astype(np.int32)


def boolean(*shape):
    return lambda rng: rng.random(shape) > 0.5


def i64_scalar(v):
    return lambda rng: np.int64(v)


def i32_scalar(v):
    return lambda rng: np.int32(v)


def mlp_args(batch, d_in, hidden, d_out):
    return [weight(d_in, hidden), f32(hidden), weight(hidden, d_out), f32(d_out), f32(batch, d_in)]


def cnn_args(b, hw, c, f1, f2):
    return [f32(b, hw, hw, c), weight(3, 3, c, f1, fan_in=9 * c), weight(2, 2, f1, f2, fan_in=4 * f1)]


def transformer_args(b, t, d):
    return [f32(b, t, d), weight(d, d), weight(d, d), weight(d, d), weight(d, d), weight(d, 2 * d),
            weight(2 * d, d), f32(d), f32(d), f32(d), f32(d)]


def rnn_args(h, steps, d_in):
    return [f32(h), f32(steps, d_in), weight(h, h), weight(d_in, h)]


# name -> [(size label, [input makers])]; the first size is the corpus's.
JAX = {
    "mlp": [("b2-8", mlp_args(2, 4, 8, 3)), ("b64-512", mlp_args(64, 256, 512, 10)),
            ("b256-1024", mlp_args(256, 784, 1024, 10))],
    "mlp_grad": [("b2-8", mlp_args(2, 4, 8, 3) + [f32(2, 3)]),
                 ("b64-512", mlp_args(64, 256, 512, 10) + [f32(64, 10)]),
                 ("b256-1024", mlp_args(256, 784, 1024, 10) + [f32(256, 10)])],
    "cnn": [("8x8", cnn_args(2, 8, 3, 4, 5)), ("32x32", cnn_args(8, 32, 3, 16, 32)),
            ("64x64", cnn_args(16, 64, 3, 32, 64))],
    "attention": [("t5", [f32(2, 5, 2, 4)] * 3), ("t64", [f32(4, 64, 4, 32)] * 3),
                  ("t256", [f32(4, 256, 8, 64)] * 3)],
    "transformer_block": [("t6-d8", transformer_args(2, 6, 8)), ("t32-d64", transformer_args(4, 32, 64)),
                          ("t128-d256", transformer_args(8, 128, 256))],
    "rnn_scan": [("h4-t6", rnn_args(4, 6, 3)), ("h64-t100", rnn_args(64, 100, 32)),
                 ("h256-t200", rnn_args(256, 200, 128))],
    "rnn_grad": [("h4-t6", rnn_args(4, 6, 3)), ("h64-t100", rnn_args(64, 100, 32)),
                 ("h256-t200", rnn_args(256, 200, 128))],
    "batched": [("7x4", [f32(7, 4), f32(4, 4)]), ("256x64", [f32(256, 64), weight(64, 64)]),
                ("1024x256", [f32(1024, 256), weight(256, 256)])],
    "remat": [("3x4", [f32(3, 4), f32(4, 4)]), ("64x128", [f32(64, 128), weight(128, 128)]),
              ("256x512", [f32(256, 512), weight(512, 512)])],
    "elementwise": [("6", [f32(6), f32(6), i32(6, hi=100)]),
                    ("10k", [f32(10_000), f32(10_000), i32(10_000, hi=100)]),
                    ("1M", [f32(1_000_000), f32(1_000_000), i32(1_000_000, hi=100)])],
    "reductions": [("4x5", [f32(4, 5), boolean(4, 5)]), ("100x100", [f32(100, 100), boolean(100, 100)]),
                   ("1000x1000", [f32(1000, 1000), boolean(1000, 1000)])],
    "nested_loops": [("3x2", [f32(3, 2)]), ("100x100", [f32(100, 100)]), ("1000x1000", [f32(1000, 1000)])],
    "control": [("5", [f32(5), i32_scalar(4)]), ("10k", [f32(10_000), i32_scalar(4)]),
                ("1M", [f32(1_000_000), i32_scalar(4)])],
    "sort_topk": [("4x6", [f32(4, 6)]), ("64x64", [f32(64, 64)]), ("256x256", [f32(256, 256)])],
}


# ---------------------------------------------------------------- Catalyst programs, in JAX
def capture_loop(sz):
    a0 = jnp.ones([sz], dtype=float)
    return (a0 + lax.fori_loop(0, 10, lambda i, a: a + a0, a0),)


def preserve_dims(x, y):
    return (jnp.sum(lax.fori_loop(0, 10, lambda i, a: a * x, y)),)


def nested_dyn(sz):
    a0 = jnp.arange(sz, dtype=float)

    def outer(i, acc):
        return lax.fori_loop(0, 2, lambda j, b: b + a0 * j, acc) + i

    return (lax.fori_loop(0, 3, outer, a0),)


def shared_dim(x, y):
    return (x * y + jnp.sin(x),)


def dyn_matmul(x, w):
    h = jnp.tanh(x @ w.T)
    return jnp.sum(h, axis=1), h.shape[0]


def sizes(*ns):
    return [(str(n) if n < 1000 else f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M", n) for n in ns]


# name -> (JAX program or None when XLA cannot compile it, static argument
# positions, [(size label, [input makers], jaxpr inputs from the
# arguments)], numpy reference for programs XLA cannot compile).
# The jaxpr's inputs are its implicit dimension arguments, then the arguments.
CATALYST = {
    "capture_loop": (capture_loop, (0,), [(s, [i64_scalar(n)], lambda a: a) for s, n in sizes(1000, 100_000, 1_000_000)], None),
    "preserve_dims": (preserve_dims, (), [(s, [f64(n), f64(n)], lambda a: [np.int64(a[0].shape[0])] + a)
                                          for s, n in sizes(1000, 100_000, 1_000_000)], None),
    "nested_dyn": (nested_dyn, (0,), [(s, [i64_scalar(n)], lambda a: a) for s, n in sizes(1000, 100_000, 1_000_000)], None),
    "shared_dim": (shared_dim, (), [(s, [f64(n), f64(n)], lambda a: [np.int64(a[0].shape[0])] + a)
                                    for s, n in sizes(1000, 100_000, 1_000_000)], None),
    "dyn_matmul": (dyn_matmul, (), [(f"{m}x{k}x{n}", [f64(m, k), f64(n, k)],
                                     lambda a: [np.int64(d) for d in (*a[0].shape, a[1].shape[0])] + a)
                                    for m, k, n in [(4, 3, 5), (128, 256, 256), (512, 512, 512)]], None),
    # The array grows in the loop: its shape is not static, XLA cannot compile it.
    "resize_loop": (None, (), [(s, [f64(n), f64(n)], lambda a: [np.int64(a[0].shape[0])] + a)
                               for s, n in sizes(1000, 100_000, 1_000_000)],
                    lambda x, y: (np.float64(x.shape[0] + 10),)),
    "while_grow": (None, (), [(s, [i64_scalar(n)], lambda a: a) for s, n in sizes(1000, 100_000, 1_000_000)],
                   lambda sz: (np.full(int(sz) + 10, 4.0),)),
}
