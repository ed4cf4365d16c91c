"""Prints the programs of the graph's grouping tests (crates/graph/tests/
scopes.rs, tests/graph.rs) as a tracing session prints them:
`pretty_print(source_info=True, name_stack=True)`, each equation followed by
its `# file:line:col (function)` and `# [name stack]` comments.

Run it with each version in its own virtual environment, writing into the
fixture folder:

    python3 -m venv /tmp/venv-jax-0.10.2
    /tmp/venv-jax-0.10.2/bin/pip install jax==0.10.2
    JAX_PLATFORMS=cpu /tmp/venv-jax-0.10.2/bin/python gen.py ../../tests/data/graph

and likewise with jax 0.4.30 (`jax==0.4.30 jaxlib==0.4.30 'numpy<2'`). Files
are named after the version (`jax_*` for 0.10.2, `jax0430_*`). The source
comments name this file by the path it was run from.
"""
import sys

import jax
import jax.numpy as jnp

V = jax.__version__
PREFIX = {"0.10.2": "jax", "0.4.30": "jax0430"}[V]
out = sys.argv[1]


def save(name, closed):
    # As jaxpr_trace._print: a width at which each equation has its line.
    text = closed.pretty_print(source_info=True, name_stack=True, width=80)
    with open(f"{out}/{PREFIX}_{name}.jaxpr", "w") as f:
        f.write(text + "\n")


def dense(w, b, x):
    with jax.named_scope("dense"):
        return jnp.tanh(x @ w + b)


def predict(params, x):
    with jax.named_scope("predict"):
        for w, b in params:
            x = dense(w, b, x)
        return x


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]


@jax.jit
def predict_jit(params, x):
    for w, b in params:
        x = dense(w, b, x)
    return x


def loss_of_jit(params, x, y):
    return jnp.mean((predict_jit(params, x) - y) ** 2)


@jax.jit
def step_of_jit(params, x, y):
    grads = jax.grad(loss_of_jit)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]


params = [(jnp.ones((4, 8)), jnp.zeros(8)), (jnp.ones((8, 2)), jnp.zeros(2))]
x = jnp.ones((16, 4))
y = jnp.zeros((16, 2))
# A train step: jit(step) > jvp(predict) > dense, and the transposes.
save("train_step", jax.make_jaxpr(step)(params, x, y))
# The same with `predict` a jit of its own: a nested jaxpr inside a scope.
save("train_step_nested_jit", jax.make_jaxpr(step_of_jit)(params, x, y))
