"""A model with a named scope, a vmap, a nested jit and a gradient: what
`jaxpr stats` sums per Python line and name stack (tests/stats.rs traces it
with `jaxpr trace`)."""
import jax
import jax.numpy as jnp


def layer(w, x):
    with jax.named_scope("dense"):
        y = jnp.tanh(x @ w)
    return y


@jax.jit
def inner(x):
    return jnp.sum(x * x)


def loss(w, x):
    y = layer(w, x)
    y = jax.vmap(lambda r: r * 2.0)(y)
    return inner(y) + jnp.sum(y)


w = jnp.ones((16, 4), jnp.float32)
x = jnp.ones((8, 16), jnp.float32)
jax.jit(jax.grad(loss))(w, x)
