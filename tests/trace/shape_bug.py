"""A shape bug JAX reports while tracing with a symbolic dimension: the
program catches it and goes on, as a test harness would."""
import jax
import jax.numpy as jnp
from jax import export


def scale(x):
    return x + jnp.ones(4, jnp.float32)


def double(x):
    return x * 2.0


spec = jax.ShapeDtypeStruct(export.symbolic_shape("v"), jnp.float32)
print(jax.make_jaxpr(double)(spec))
try:
    jax.jit(scale).trace(spec)
except TypeError as e:
    print("caught:", e)
