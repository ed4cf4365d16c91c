"""equinox, as its docs write it: modules are pytrees, `eqx.filter_jit`,
`eqx.filter_value_and_grad`, `eqx.partition`/`eqx.combine`, `eqx.nn` layers.
Each program takes the model's arrays (`eqx.partition(model, eqx.is_array)`)."""
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

from common import Program, f32, labels

DISTRIBUTIONS = ["equinox", "optax"]


def as_arrays(model, fn):
    """The program of arrays: the model's arrays in, `fn(model, *args)` out."""
    params, static = eqx.partition(model, eqx.is_array)

    def program(params, *args):
        return fn(eqx.combine(params, static), *args)
    return program, params


class CNN(eqx.Module):
    """The equinox MNIST CNN example, smaller."""
    layers: list

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Conv2d(1, 3, kernel_size=3, key=k1),
            eqx.nn.MaxPool2d(kernel_size=2),
            jax.nn.relu,
            jnp.ravel,
            eqx.nn.Linear(3 * 5 * 5, 8, key=k2),
            jax.nn.sigmoid,
            eqx.nn.Linear(8, 10, key=k3),
            jax.nn.log_softmax,
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def programs():
    ps = []
    key = jax.random.PRNGKey(0)
    mlp = eqx.nn.MLP(in_size=4, out_size=2, width_size=8, depth=2, key=key)
    x, y = f32(1, 6, 4), f32(2, 6, 2)
    fwd, params = as_arrays(mlp, lambda m, x: jax.vmap(m)(x))
    ps.append(Program("mlp_vmap", fwd, [params, x], "eqx.nn.MLP under jax.vmap"))

    @eqx.filter_value_and_grad
    def loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    optim = optax.adam(1e-2)

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        value, grads = loss(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        model = eqx.apply_updates(model, updates)
        return model, opt_state, value
    opt_state = optim.init(eqx.filter(mlp, eqx.is_array))
    step, params = as_arrays(mlp, lambda m, s, x, y: (eqx.filter(make_step(m, s, x, y), eqx.is_array)))
    ps.append(Program("mlp_adam_make_step", step, [params, opt_state, x, y],
                      "the equinox docs' make_step: filter_jit, filter_value_and_grad, optax.adam, apply_updates"))

    cnn = CNN(jax.random.PRNGKey(1))
    img, lab = f32(3, 4, 1, 8, 8), labels(4, 4, 10)

    def xent(model, x, y):
        pred = jax.vmap(model)(x)
        return -jnp.mean(jnp.take_along_axis(pred, y[:, None], axis=1))
    g, params = as_arrays(cnn, lambda m, x, y: eqx.filter_grad(xent)(m, x, y))
    ps.append(Program("cnn_filter_grad", g, [params, img, lab], "the MNIST example's loss, eqx.filter_grad"))

    cell = eqx.nn.GRUCell(3, 5, key=jax.random.PRNGKey(2))

    def run_gru(cell, xs):
        def body(h, x):
            h = cell(x, h)
            return h, h
        return jax.lax.scan(body, jnp.zeros(5), xs)
    gru, params = as_arrays(cell, run_gru)
    ps.append(Program("gru_scan", gru, [params, f32(5, 7, 3)], "eqx.nn.GRUCell in lax.scan"))

    attn = eqx.nn.MultiheadAttention(num_heads=2, query_size=8, key=jax.random.PRNGKey(3))
    a, params = as_arrays(attn, lambda m, q: m(q, q, q))
    ps.append(Program("multihead_attention", a, [params, f32(6, 5, 8)], "eqx.nn.MultiheadAttention"))

    ln = eqx.nn.LayerNorm(8)
    n, params = as_arrays(ln, lambda m, x: jax.vmap(m)(x))
    ps.append(Program("layernorm_vmap", n, [params, f32(7, 4, 8)], "eqx.nn.LayerNorm under vmap"))

    bn = eqx.nn.BatchNorm(4, axis_name="batch")
    model, state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(4, axis_name="batch")
    del bn

    def batchnorm(model, state, x):
        return jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(x, state)
    b, params = as_arrays(model, batchnorm)
    ps.append(Program("batchnorm_stateful", b, [params, state, f32(8, 6, 4)],
                      "eqx.nn.BatchNorm with eqx.nn.State (make_with_state), vmapped with axis_name"))

    emb = eqx.nn.Embedding(10, 4, key=jax.random.PRNGKey(4))
    e, params = as_arrays(emb, lambda m, ids: jax.vmap(m)(ids))
    ps.append(Program("embedding", e, [params, labels(9, 6, 10)], "eqx.nn.Embedding"))

    def while_sum(x):
        return eqx.internal.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1), (0, x),
                                       max_steps=8, kind="checkpointed")[1]
    ps.append(Program("checkpointed_while_grad", jax.grad(lambda x: while_sum(x).sum()), [f32(10, 3)],
                      "eqx.internal.while_loop(kind='checkpointed'), differentiated (diffrax's loop)"))
    ps.append(Program("bounded_while", lambda x: eqx.internal.while_loop(
        lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1), (0, x), max_steps=8, kind="bounded")[1],
        [f32(11, 3)], "eqx.internal.while_loop(kind='bounded')"))
    ps.append(Program("mlp_vmap_poly", fwd, [params_of(mlp), x], "the MLP exported with a symbolic batch",
                      poly=[None, "b, 4"]))
    return ps


def params_of(model):
    return eqx.partition(model, eqx.is_array)[0]
