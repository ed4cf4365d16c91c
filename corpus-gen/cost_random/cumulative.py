"""XLA's cost of JAX's lowering of the cumulative reductions (`cumsum`,
`cumprod`, `cummax`, `cummin`, `cumlogsumexp`), for the cost model's
`CostRule::Cumulative` (`crates/cost`).

Writes into DIR one program per primitive, dtype (f32, i32, bool, f16,
bf16, i8, u8, u32; those JAX refuses are counted, not written), shape
(sizes 0-8, rank 1-3), axis and direction, and a few programs with them in
context (constant operands, inside `jit`/`scan`/`cond`, `jnp` wrappers,
complex operands), each with XLA's figures in `cost.json`
(`corpus-gen/xla_cost.py`: `jax.jit(f).lower(x).cost_analysis()`). Judge
them with

    COST_RANDOM=$PWD/DIR cargo test --release -p jaxpr-cost --test xla random_programs -- --nocapture

    PY=$(bash tests/trace/venv.sh jax 0.10.2)   # or `jax 0.4.30`
    $PY corpus-gen/cost_random/cumulative.py DIR
"""
import collections
import itertools
import json
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xla_cost import cost  # noqa: E402

OPS = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax,
       "cummin": lax.cummin, "cumlogsumexp": lax.cumlogsumexp}
DTYPES = [jnp.float32, jnp.int32, jnp.bool_, jnp.float16, jnp.bfloat16, jnp.int8, jnp.uint8,
          jnp.uint32]
SHAPES = [(0,), (1,), (2,), (5,), (8,), (3, 4), (2, 0, 3), (4, 1, 3), (2, 3, 5), (1, 1)]


def f32(*shape):
    return np.ones(shape, np.float32)


IN_CONTEXT = {
    "const_operand": (lambda x: lax.cumsum(jnp.ones((3, 4), x.dtype), 1) + x, f32(3, 4)),
    "const_iota": (lambda x: jnp.cumsum(jnp.arange(5.0)) * x, f32(5)),
    "after_mul": (lambda x: lax.cumsum(x * 2, 0), f32(3, 4)),
    "two_same": (lambda x: lax.cumsum(x, 0) + lax.cumsum(x, 0, reverse=True), f32(3, 4)),
    "two_kinds": (lambda x: lax.cummax(x, 1) - lax.cummin(x, 0), f32(3, 4)),
    "chain": (lambda x: lax.cumprod(lax.cumsum(x, 1), 1), f32(2, 5)),
    "in_jit": (lambda x: jax.jit(lambda v: lax.cumsum(v, 0))(x) + 1, f32(6)),
    "in_scan": (lambda x: lax.scan(lambda c, _: (lax.cumsum(c, 0), None), x, None, length=3)[0],
                f32(4)),
    "in_cond": (lambda x: lax.cond(x.sum() > 0, lambda v: lax.cummax(v, 0), lambda v: v, x),
                f32(4, 2)),
    "jnp_bool": (lambda x: jnp.cumsum(x > 1), f32(7)),
    "jnp_int8": (lambda x: jnp.cumsum(x.astype(jnp.int8), axis=0), f32(3, 3)),
    "jnp_f16": (lambda x: jnp.cumprod(x.astype(jnp.float16), axis=1), f32(3, 3)),
    "jnp_flat": (lambda x: jnp.cumsum(x), f32(2, 3)),
    "unread": (lambda x: (lax.cumsum(x, 0), x)[1] * 3, f32(4)),
    "unit_axis": (lambda x: lax.cumsum(x, 1) * x, f32(4, 1, 3)),
    "empty": (lambda x: lax.cumsum(x, 0) + 1, f32(2, 0)),
    "vmap": (lambda x: jax.vmap(lambda v: lax.cumsum(v, 0))(x), f32(3, 5)),
    "grad": (lambda x: jax.grad(lambda v: lax.cumsum(v, 0).sum())(x), f32(5)),
    "logsumexp": (lambda x: lax.cumlogsumexp(x, 0, reverse=True) - x, f32(6, 2)),
    "nancumsum": (lambda x: jnp.nancumsum(x, axis=0), f32(3, 2)),
    "two_results": (lambda x: (lax.cumsum(x, 0), lax.cummin(x, 0)), f32(3)),
    "splat_operand": (lambda x: lax.cumsum(jnp.broadcast_to(x.sum(), (4, 3)), 0), f32(2)),
    "complex_prod": (lambda x: lax.cumprod(x.astype(jnp.complex64), 0), f32(4)),
    "complex_max": (lambda x: lax.cummax(x.astype(jnp.complex64) * 1j, 0), f32(4)),
    "complex_logsumexp": (lambda x: lax.cumlogsumexp(x.astype(jnp.complex64), 0), f32(3, 2)),
    "i32_max": (lambda x: lax.cummax(x.astype(jnp.int32), 0), f32(4, 4)),
}


def programs():
    """(name, function, argument): each primitive alone, then in context."""
    for (op, f), dtype, shape, reverse in itertools.product(OPS.items(), DTYPES, SHAPES,
                                                            [False, True]):
        for axis in range(len(shape)):
            name = f"{op}_{np.dtype(dtype).name}_{'x'.join(map(str, shape))}_a{axis}" + \
                ("_rev" if reverse else "")
            yield name, (lambda f, axis, reverse: lambda v: f(v, axis=axis, reverse=reverse))(
                f, axis, reverse), np.ones(shape, dtype)
    yield from ((name, f, x) for name, (f, x) in IN_CONTEXT.items())


def main(out):
    os.makedirs(out, exist_ok=True)
    recorded, refused = {}, collections.Counter()
    for name, f, x in programs():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                text = str(jax.make_jaxpr(f)(x)) + "\n"
                recorded[name] = cost(f, (x,))
        except (TypeError, OverflowError) as e:  # bool operands; -inf as an integer
            refused[type(e).__name__] += 1
            continue
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(text)
    with open(os.path.join(out, "cost.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}",
                   "generator": "corpus-gen/cost_random/cumulative.py",
                   "xla": "jax.jit(f).lower(x).cost_analysis()",
                   "programs": recorded}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"jax {jax.__version__}: {len(recorded)} programs, JAX refused {dict(refused)}")


if __name__ == "__main__":
    main(sys.argv[1])
