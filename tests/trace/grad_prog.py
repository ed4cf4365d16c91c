"""The three-line `jit(grad(loss))` program `jaxpr trace` is run on with
every JAX minor (tests/trace.rs, `trace_versions_*`), with the caches
cleared and the function traced again."""
import jax
import jax.numpy as jnp


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


step = jax.jit(jax.grad(loss))
print(step(jnp.ones(3), jnp.arange(6.0).reshape(2, 3)))
step.clear_cache()
jax.clear_caches()
print(step(jnp.ones(3), jnp.arange(6.0).reshape(2, 3)))
