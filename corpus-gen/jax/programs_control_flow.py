"""lax_control_flow_test: the kinds of program its test methods build (while, fori,
cond, switch, scan, map, associative_scan, custom_linear_solve, custom_root,
platform_dependent), each under the transformations the tests apply (jit, vmap
with batched predicates, jvp, linearize, grad, remat) at several dtypes."""
from functools import partial
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
from common import rng_for, dtname
from gen import Program


def while_count(x):
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]

def while_tuple(x):
    return lax.while_loop(lambda c: jnp.sum(c[1]) < 100, lambda c: (c[0] + 1, c[1] + 1, c[2] * c[1]), (0, x, x))

def nested_while(x):
    def outer(c):
        i, v = c
        v = lax.while_loop(lambda d: d[0] < 3, lambda d: (d[0] + 1, d[1] + v), (0, v))[1]
        return i + 1, v
    return lax.while_loop(lambda c: c[0] < 2, outer, (0, x))[1]

def while_value_dependent(x):
    # Doubling from at least 1 reaches the bound whatever the inputs' signs.
    return lax.while_loop(lambda v: jnp.max(jnp.abs(v)) < 50, lambda v: v * 2 + 1, jnp.abs(x) + 1)

def while_dynamic_update(x):
    def body(c):
        i, v = c
        return i + 1, lax.dynamic_update_slice(v, v[i:i + 1] + 1, (i,))
    return lax.while_loop(lambda c: c[0] < v_len(x), body, (0, x))[1]

def v_len(x):
    return x.shape[0]

def fori_basic(x):
    return lax.fori_loop(0, 4, lambda i, v: v + i, x)

def fori_unrolled(x):
    return lax.fori_loop(0, 4, lambda i, v: v * 2, x, unroll=2)

def fori_dynamic_bounds(x):
    n = jnp.sum(x > 0).astype(jnp.int32)
    return lax.fori_loop(0, n, lambda i, v: v + 1, x)

def fori_dict_state(x):
    return lax.fori_loop(0, 3, lambda i, s: {"a": s["a"] + s["b"], "b": s["b"] * 2}, {"a": x, "b": x})["a"]

def cond_basic(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: v * 2, lambda v: -v, x)

def cond_two_operands(x):
    return lax.cond(x[0] > 0, lambda a, b: a + b, lambda a, b: a - b, x, x * 2)

def cond_consts(x):
    c = jnp.arange(x.shape[0], dtype=x.dtype)
    return lax.cond(x[0] > 0, lambda v: v + c, lambda v: v * c, x)

def nested_cond(x):
    inner = lambda v: lax.cond(v[0] < 1, lambda w: w + 1, lambda w: w - 1, v)
    return lax.cond(x[0] > 0, inner, lambda v: v, x)

def switch_three(x):
    idx = jnp.clip(jnp.sum(x > 0), 0, 2).astype(jnp.int32)
    return lax.switch(idx, [lambda v: v, lambda v: v * 2, lambda v: -v], x)

def switch_one_branch(x):
    return lax.switch(0, [lambda v: v + 1], x)

def scan_cumsum(x):
    return lax.scan(lambda c, v: (c + v, c), jnp.zeros_like(x[0]), x)

def scan_reverse(x):
    return lax.scan(lambda c, v: (c * 2 + v, c), x[0], x, reverse=True)

def scan_unroll(x):
    return lax.scan(lambda c, v: (c + v, v * c), x[0], x, unroll=2)

def scan_xs_none(x):
    return lax.scan(lambda c, _: (c * 2, c), x[0], None, length=3)

def scan_rnn(x):
    w = jnp.ones((x.shape[1], x.shape[1]), x.dtype)
    def step(h, xt):
        h = jnp.tanh(h @ w + xt) if jnp.issubdtype(x.dtype, jnp.inexact) else h @ w + xt
        return h, h
    return lax.scan(step, jnp.zeros_like(x[0]), x)

def scan_length_arg(x):
    return lax.scan(lambda c, _: (c + 1, c), x, None, length=4)

def map_fn(x):
    return lax.map(lambda v: v * v + 1, x)

def map_batched(x):
    return lax.map(lambda v: jnp.sum(v), x, batch_size=2)

def assoc_scan(x):
    return lax.associative_scan(jnp.add, x)

def assoc_scan_reverse(x):
    return lax.associative_scan(jnp.maximum, x, reverse=True)

def cumulative_ops(x):
    return lax.cumsum(x, axis=0), lax.cummax(x, axis=0), lax.cumprod(x, axis=1)

def linear_solve(x):
    a = jnp.eye(x.shape[0], dtype=x.dtype) * 3 + 0.1
    mv = lambda v: a @ v
    solve = lambda m, b: jnp.linalg.solve(a, b)
    return lax.custom_linear_solve(mv, x[:, 0], solve, solve)

def linear_solve_symmetric(x):
    a = jnp.eye(x.shape[0], dtype=x.dtype) * 2
    return lax.custom_linear_solve(lambda v: a @ v, x[:, 0], lambda m, b: b / 2, symmetric=True)

def root(x):
    f = lambda y: y * y - jnp.abs(x[:, 0]) - 1
    newton = lambda g, y0: lax.fori_loop(0, 5, lambda i, y: y - g(y) / (2 * y), y0)
    return lax.custom_root(f, jnp.ones_like(x[:, 0]) * 2, newton, lambda g, y: y / (2 * jnp.ones_like(y)))

def platform_dependent(x):
    return lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)

def while_vmap_batched_pred(x):
    # From at least 1, doubling ends every element's loop (a batched predicate).
    start = jnp.abs(x[:, 0]) + 1
    return jax.vmap(lambda v: lax.while_loop(lambda c: jnp.abs(c) < 10, lambda c: c * 2 + 1, v))(start)

def cond_vmap(x):
    return jax.vmap(cond_basic)(x)

def switch_vmap(x):
    return jax.vmap(switch_three)(x)

def scan_vmap(x):
    return jax.vmap(lambda r: scan_cumsum(r[:, None]))(x)

def platform_vmap(x):
    return jax.vmap(platform_dependent)(x)

FLOAT_ONLY_TRANSFORMS = {
    "jvp": lambda f: lambda x: jax.jvp(f, (x,), (jnp.ones_like(x),)),
    "linearize": lambda f: lambda x: jax.linearize(f, x)[1](jnp.ones_like(x)),
    "grad": lambda f: jax.grad(lambda x: jnp.sum(jnp.real(jax.tree.leaves(f(x))[0]))),
    "remat_grad": lambda f: jax.grad(lambda x: jnp.sum(jnp.real(jax.tree.leaves(jax.checkpoint(f)(x))[0]))),
}

PROGRAMS = [  # (function, argument shape, differentiable)
    (while_count, (4,), False), (while_tuple, (4,), False), (nested_while, (4,), False),
    (while_value_dependent, (3, 2), False), (while_dynamic_update, (5,), False),
    (fori_basic, (4,), True), (fori_unrolled, (4,), True), (fori_dynamic_bounds, (4,), False),
    (fori_dict_state, (3,), True), (cond_basic, (4,), True), (cond_two_operands, (4,), True),
    (cond_consts, (4,), True), (nested_cond, (4,), True), (switch_three, (4,), True),
    (switch_one_branch, (4,), True), (scan_cumsum, (5, 3), True), (scan_reverse, (5, 3), True),
    (scan_unroll, (6, 2), True), (scan_xs_none, (3, 2), True), (scan_rnn, (4, 3), True),
    (scan_length_arg, (2,), True), (map_fn, (3, 2), True), (map_batched, (4, 2), True),
    (assoc_scan, (8,), True), (assoc_scan_reverse, (8, 2), False), (cumulative_ops, (4, 3), True),
    (linear_solve, (3, 3), True), (linear_solve_symmetric, (3, 3), True), (root, (3, 2), True),
    (platform_dependent, (4,), True), (while_vmap_batched_pred, (4, 2), False),
    (cond_vmap, (3, 4), True), (switch_vmap, (3, 4), True), (scan_vmap, (2, 5), True),
    (platform_vmap, (3, 2), False),
]


def arg(name, shape, dt):
    rng = rng_for(name)
    x = rng.randn(*shape) * 2
    return (x + 1j * rng.randn(*shape)).astype(dt) if np.issubdtype(dt, np.complexfloating) else x.astype(dt)


def programs(mods):
    for fn, shape, diff in PROGRAMS:
        for dt in [np.float32, np.int32, np.float16, jnp.bfloat16, np.complex64]:
            if fn in (linear_solve, linear_solve_symmetric, root) and not np.issubdtype(dt, np.inexact):
                continue
            name = f"{fn.__name__}_{dtname(dt)}"
            src = f"lax_control_flow_test.py:{fn.__name__}"
            yield Program(name, fn, [arg(name, shape, dt)], src)
            yield Program(f"jit_{name}", jax.jit(fn), [arg(name, shape, dt)], src)
            if diff and dt in (np.float32, np.complex64):
                for tname, t in FLOAT_ONLY_TRANSFORMS.items():
                    if tname in ("grad", "remat_grad") and dt == np.complex64:
                        continue
                    yield Program(f"{tname}_{name}", t(fn), [arg(name, shape, dt)], src)
