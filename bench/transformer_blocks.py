"""The large corpus programs (`../shared/corpus/large/gen_large.py`):
`value_and_grad` of N unrolled transformer blocks, and their arguments.
Imported by the benchmarks that time JAX on them (`jax_lower.py`,
`xla_compile.py`), with the corpus's `jax/` folder on `sys.path`."""
import jax.numpy as jnp
from programs_jax import transformer_block, f32


def deep(x, params):
    for p in params:
        x = transformer_block(x, *p)
    return jnp.sum(x)


def arguments(n):
    """The input and the parameters of N blocks."""
    params = [(f32(8, 8), f32(8, 8), f32(8, 8), f32(8, 8), f32(8, 16), f32(16, 8), f32(8), f32(8), f32(8), f32(8))
              for _ in range(n)]
    return f32(2, 6, 8), params
