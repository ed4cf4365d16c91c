"""Catalyst programs with dynamically-shaped arrays (after the corpus's
programs_catalyst.py)."""
import jax
import jax.numpy as jnp
from catalyst import for_loop, qjit


@qjit(abstracted_axes={0: "n"})
def scale_loop(x, y):
    @for_loop(0, 10, 1)
    def loop(_, a):
        return a * x

    return jnp.sum(loop(y))


@qjit
def grow(sz: int):
    o = jnp.ones((sz + 1,), dtype=float)
    return o


print(scale_loop(jnp.ones(3), jnp.ones(3)))
print(grow(3))


@jax.jit
def norm(x):
    return jnp.sqrt(jnp.sum(x * x))


print(norm(jnp.ones(4)))
