"""A small JAX training step: what `jaxpr trace` should capture."""
import sys

import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def predict(w, x):
    return jnp.tanh(x @ w)


def loss(w, x, y):
    p = predict(w, x)
    d = p - y
    return jnp.mean(d * d)


@jax.jit
def step(w, x, y):
    return w - 0.1 * jax.grad(loss)(w, x, y)


@jax.jit
def power(x, n):
    def body(i, acc):
        return acc * x
    return lax.fori_loop(0, n, body, jnp.ones_like(x))


def steps():
    return int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 1


w = jnp.ones((4, 3), jnp.float32)
x = jnp.ones((8, 4), jnp.float32)
y = jnp.zeros((8, 3), jnp.float32)
for _ in range(steps()):
    w = step(w, x, y)
print("loss", float(loss(w, x, y)))
print("power", power(jnp.float32(2.0), 3))
