"""The three-line `jit(grad(loss))` program `jaxpr trace` is run on with
every JAX minor (tests/trace.rs, `trace_versions_*`)."""
import jax
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


print(jax.jit(jax.grad(loss))(jnp.ones(3), jnp.arange(6.0).reshape(2, 3)))
