"""Times JAX's own lowering of the large corpus programs: `jax.jit(f).lower(...)`
of `value_and_grad` of N unrolled transformer blocks (the programs of
`../shared/corpus/large/transformer{150,600}_grad.jaxpr.gz`, made by
`gen_large.py` there). Prints one line per size: `N SECONDS LOWERING_SECONDS`,
the whole `lower(...)` (tracing the Python function, then lowering its jaxpr to
StableHLO) and, from a second fresh `jit`, the lowering step alone (`.trace(...)`
first, then `.lower()` timed): the step `jaxpr build` does, from a jaxpr. A
third figure is JAX lowering the program's jaxpr itself, as a user holding a
jaxpr would (`jax.jit(partial(jax.core.eval_jaxpr, jaxpr, consts)).lower(...)`:
tracing the jaxpr's equations again, then lowering):
`N SECONDS LOWERING_SECONDS FROM_JAXPR_SECONDS`.

usage: python bench/jax_lower.py CORPUS_DIR [N ...]   (default N: 150 600)
"""
import sys
import time
from functools import partial

corpus = sys.argv[1]
sizes = [int(a) for a in sys.argv[2:]] or [150, 600]
sys.path.insert(0, f"{corpus}/jax")

import jax  # noqa: E402
from programs_jax import f32  # noqa: E402
from transformer_blocks import deep, arguments  # noqa: E402

for n in sizes:
    _, params = arguments(n)
    f = jax.jit(jax.value_and_grad(deep))
    t = time.perf_counter()
    f.lower(f32(2, 6, 8), params)
    whole = time.perf_counter() - t
    traced = jax.jit(jax.value_and_grad(deep)).trace(f32(2, 6, 8), params)
    t = time.perf_counter()
    traced.lower()
    lowering = time.perf_counter() - t
    x = f32(2, 6, 8)
    closed = jax.make_jaxpr(jax.value_and_grad(deep))(x, params)
    flat = jax.tree_util.tree_leaves((x, params))
    g = jax.jit(partial(jax.core.eval_jaxpr, closed.jaxpr, closed.consts))
    t = time.perf_counter()
    g.lower(*flat)
    from_jaxpr = time.perf_counter() - t
    print(n, f"{whole:.3f}", f"{lowering:.3f}", f"{from_jaxpr:.3f}", flush=True)
