"""Times JAX's own checker on the large corpus programs: traces the function
of `large/gen_large.py` (N unrolled transformer blocks, value_and_grad) and
times only `check_jaxpr` on the result (best of REPEATS runs, seconds).

usage: python scripts/jax_check_time.py CORPUS_LARGE_DIR N_BLOCKS [REPEATS]
"""
import sys
import time
import warnings

sys.path.insert(0, sys.argv[1])
n = int(sys.argv[2])
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3

import jax
import jax.numpy as jnp
from programs_jax import transformer_block, f32

try:
    from jax.extend.core import check_jaxpr
except ImportError:  # older JAX
    from jax.core import check_jaxpr

# The same program as gen_large.py.
params = [(f32(8, 8), f32(8, 8), f32(8, 8), f32(8, 8), f32(8, 16), f32(16, 8), f32(8), f32(8), f32(8), f32(8))
          for _ in range(n)]


def deep(x, params):
    for p in params:
        x = transformer_block(x, *p)
    return jnp.sum(x)


cj = jax.make_jaxpr(jax.value_and_grad(deep))(f32(2, 6, 8), params)
best = float("inf")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _ in range(repeats):
        t = time.perf_counter()
        check_jaxpr(cj.jaxpr)
        best = min(best, time.perf_counter() - t)
print(f"{len(cj.jaxpr.eqns)} {best:.3f}")
