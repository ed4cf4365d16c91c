"""A jitted function that closes over arrays, called from another: JAX
prints the arrays as the nested jaxpr's constants, by name only
(`let inner = { lambda a:bool[1,3] b:f32[3]; c:f32[3]. let ...`); the
session records their values beside the text."""
import jax
import jax.numpy as jnp

SCALE = jnp.arange(3.0, dtype=jnp.float32) + 0.5
MASK = jnp.array([[True, False, True]])


@jax.jit
def inner(x):
    return jnp.where(MASK[0], x * SCALE, -x)


@jax.jit
def outer(x):
    return jnp.sin(inner(x)) + inner(x * 2)


print(outer(jnp.linspace(-1.0, 1.0, 3, dtype=jnp.float32)).tolist())
