"""flax.nnx, as its docs write it: modules holding their own state, `nnx.jit`
train steps with `nnx.Optimizer` and `nnx.value_and_grad`. Each program is the
function of arrays that the docs' functional API gives (`nnx.split` outside,
`nnx.merge` inside), so that its inputs are the state's arrays."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from common import Program, f32, labels, leaves_are_arrays

DISTRIBUTIONS = ["flax", "optax"]


class MLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.bn(self.linear1(x))))


class CNN(nnx.Module):
    """The MNIST CNN of the nnx basics tutorial, smaller."""
    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(4, 8, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = lambda x: nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(8 * 2 * 2, 8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.linear2(nnx.relu(self.linear1(x)))


class Block(nnx.Module):
    def __init__(self, dim, heads, *, rngs):
        self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=dim, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.mlp = nnx.Sequential(nnx.Linear(dim, 2 * dim, rngs=rngs), nnx.gelu, nnx.Linear(2 * dim, dim, rngs=rngs))

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Tokens(nnx.Module):
    def __init__(self, *, rngs):
        self.embed = nnx.Embed(num_embeddings=12, features=8, rngs=rngs)
        self.block = Block(8, 2, rngs=rngs)
        self.head = nnx.Linear(8, 12, rngs=rngs)

    def __call__(self, ids):
        return self.head(self.block(self.embed(ids)))


def functional(graphdef, fn):
    """The nnx docs' functional form: the program takes and returns the state."""
    def program(state, *args):
        obj = nnx.merge(graphdef, state)
        out = fn(obj, *args)
        return out, nnx.state(obj)
    return program


def train_step_fn(loss):
    @nnx.jit
    def train_step(model_and_opt, x, y):
        model, optimizer = model_and_opt
        value, grads = nnx.value_and_grad(lambda m: loss(m, x, y))(model)
        optimizer.update(model, grads)
        return value
    return train_step


def xent(model, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()


def train_program(name, model, tx, x, y, loss, source):
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    step = train_step_fn(loss)
    prog = functional(graphdef, lambda mo, x, y: step(mo, x, y))
    return Program(name, prog, [state, x, y], source, build=leaves_are_arrays(state))


def forward_program(name, model, x, source, poly=None, train=False):
    if not train:
        model.eval()
    graphdef, state = nnx.split(model)
    prog = functional(graphdef, lambda m, x: m(x))
    return Program(name, prog, [state, x], source, poly=poly, build=leaves_are_arrays(state))


def programs():
    ps = []
    x, y = f32(1, 8, 6), labels(2, 8, 3)
    ps.append(forward_program("mlp_batchnorm_eval", MLP(6, 16, 3, rngs=nnx.Rngs(0)), x,
                              "nnx.Linear, nnx.BatchNorm (eval), nnx.relu"))
    ps.append(forward_program("mlp_batchnorm_train", MLP(6, 16, 3, rngs=nnx.Rngs(0)), x,
                              "nnx.BatchNorm in training mode updates its batch statistics", train=True))
    ps.append(train_program("mlp_adam_train_step", MLP(6, 16, 3, rngs=nnx.Rngs(0)), optax.adam(1e-3), x, y, xent,
                            "the nnx MLP tutorial's train step: nnx.Optimizer(adam), nnx.value_and_grad"))
    img, ylab = f32(3, 4, 8, 8, 1), labels(4, 4, 10)
    ps.append(forward_program("cnn_forward", CNN(rngs=nnx.Rngs(0)), img, "the MNIST tutorial's CNN (nnx.Conv, avg_pool)"))
    ps.append(train_program("cnn_adamw_train_step", CNN(rngs=nnx.Rngs(0)), optax.adamw(1e-3, 0.9), img, ylab, xent,
                            "the MNIST tutorial's train step with adamw"))
    ids = labels(5, 2 * 5, 12).reshape(2, 5)
    tgt = labels(6, 2 * 5, 12).reshape(2, 5)
    ps.append(forward_program("transformer_block", Tokens(rngs=nnx.Rngs(0)), ids,
                              "nnx.Embed, nnx.MultiHeadAttention, nnx.LayerNorm, nnx.gelu"))
    ps.append(train_program("transformer_sgd_train_step", Tokens(rngs=nnx.Rngs(0)), optax.sgd(0.1, momentum=0.9),
                            ids, tgt, xent, "a token model's train step (take_along_axis in the loss's gradient)"))

    class Dropper(nnx.Module):
        def __init__(self, *, rngs):
            self.linear = nnx.Linear(6, 6, rngs=rngs)
            self.dropout = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.dropout(self.linear(x))
    ps.append(forward_program("dropout_train", Dropper(rngs=nnx.Rngs(0, dropout=1)), x,
                              "nnx.Dropout with its rng stream (keys in the state)", train=True))

    # nnx.scan over stacked layers (the docs' "scan over layers"), built with nnx.vmap.
    @nnx.vmap(in_axes=0, out_axes=0)
    def make_layers(key):
        return nnx.Linear(6, 6, rngs=nnx.Rngs(key))
    layers = make_layers(jax.random.split(jax.random.key(0), 3))
    gd, st = nnx.split(layers)

    def scan_layers(state, x):
        stack = nnx.merge(gd, state)

        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def forward(layer, x):
            return jnp.tanh(layer(x))
        return forward(stack, x)
    ps.append(Program("scan_over_layers", scan_layers, [st, x], "nnx.vmap to create, nnx.scan to apply stacked layers"))

    class Cell(nnx.Module):
        def __init__(self, *, rngs):
            self.cell = nnx.LSTMCell(4, 6, rngs=rngs)
            self.rnn = nnx.RNN(self.cell)

        def __call__(self, xs):
            return self.rnn(xs)
    ps.append(forward_program("lstm_rnn", Cell(rngs=nnx.Rngs(0)), f32(7, 2, 5, 4), "nnx.RNN over nnx.LSTMCell"))
    ps.append(forward_program("mlp_eval_poly", MLP(6, 16, 3, rngs=nnx.Rngs(0)), x,
                              "the MLP exported with a symbolic batch", poly=[None, "b, 6"]))
    return ps
