"""flax.linen, as its docs write it: `model.init`/`model.apply`, `TrainState`
train steps, `mutable=['batch_stats']`, `nn.scan`, `nn.remat`."""

import jax
import jax.numpy as jnp
import optax
import flax.linen as nn
from flax.training import train_state

from common import Program, f32, labels

DISTRIBUTIONS = ["flax", "optax"]


class MLP(nn.Module):
    features: tuple = (16, 8, 3)

    @nn.compact
    def __call__(self, x):
        for f in self.features[:-1]:
            x = nn.relu(nn.Dense(f)(x))
        return nn.Dense(self.features[-1])(x)


class CNN(nn.Module):
    """The linen MNIST example's CNN, smaller."""
    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.Conv(features=4, kernel_size=(3, 3))(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x)
        x = nn.max_pool(x, window_shape=(2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(features=10)(x)


class EncoderBlock(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm()(x)
        y = nn.SelfAttention(num_heads=2, qkv_features=8)(y)
        x = x + y
        y = nn.LayerNorm()(x)
        y = nn.Dense(16)(y)
        y = nn.gelu(y)
        return x + nn.Dense(8)(y)


class ScannedLSTM(nn.Module):
    @nn.compact
    def __call__(self, xs):
        cell = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)(features=6)
        carry = cell.initialize_carry(jax.random.key(0), xs[:, 0].shape)
        return cell(carry, xs)


class RematMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(2):
            x = nn.remat(nn.Dense)(8)(x)
            x = nn.tanh(x)
        return x


def programs():
    ps = []
    x, y = f32(1, 8, 5), labels(2, 8, 3)
    mlp = MLP()
    params = mlp.init(jax.random.key(0), x)
    ps.append(Program("mlp_apply", lambda v, x: mlp.apply(v, x), [params, x], "model.apply of a Dense/relu MLP"))

    state = train_state.TrainState.create(apply_fn=mlp.apply, params=params["params"], tx=optax.adam(1e-3))

    def train_step(params, opt_state, step, x, y):
        st = state.replace(params=params, opt_state=opt_state, step=step)

        def loss_fn(p):
            logits = st.apply_fn({"params": p}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(st.params)
        st = st.apply_gradients(grads=grads)
        return st.params, st.opt_state, st.step, loss
    ps.append(Program("mlp_trainstate_step", train_step, [state.params, state.opt_state, state.step, x, y],
                      "flax.training.train_state.TrainState.apply_gradients with optax.adam"))

    img, ylab = f32(3, 4, 6, 6, 1), labels(4, 4, 10)
    cnn = CNN()
    v = cnn.init(jax.random.key(1), img)
    ps.append(Program("cnn_eval", lambda v, x: cnn.apply(v, x, train=False), [v, img], "CNN with BatchNorm, eval"))

    def cnn_train_step(params, batch_stats, x, y):
        def loss_fn(p):
            logits, updates = cnn.apply({"params": p, "batch_stats": batch_stats}, x, train=True,
                                        mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), updates
        (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return params, updates["batch_stats"], loss
    ps.append(Program("cnn_batchstats_train_step", cnn_train_step, [v["params"], v["batch_stats"], img, ylab],
                      "train step with mutable=['batch_stats'] (the linen BatchNorm how-to)"))

    enc = EncoderBlock()
    seq = f32(5, 2, 4, 8)
    ve = enc.init(jax.random.key(2), seq)
    ps.append(Program("encoder_block", lambda v, x: enc.apply(v, x), [ve, seq], "nn.SelfAttention, nn.LayerNorm, nn.gelu"))
    ps.append(Program("encoder_block_grad", jax.grad(lambda v, x: (enc.apply(v, x) ** 2).mean()), [ve, seq],
                      "the gradient of the encoder block with respect to its variables"))

    lstm = ScannedLSTM()
    xs = f32(6, 2, 5, 3)
    vl = lstm.init(jax.random.key(3), xs)
    ps.append(Program("scanned_lstm", lambda v, xs: lstm.apply(v, xs), [vl, xs],
                      "nn.scan over nn.OptimizedLSTMCell (variable_broadcast='params')"))

    rm = RematMLP()
    vr = rm.init(jax.random.key(4), x)
    ps.append(Program("remat_mlp_grad", jax.grad(lambda v, x: rm.apply(v, x).sum()), [vr, x],
                      "nn.remat (checkpoint) layers, differentiated"))
    ps.append(Program("mlp_apply_poly", lambda v, x: mlp.apply(v, x), [params, x],
                      "the MLP exported with a symbolic batch", poly=[None, "b, 5"]))

    class Dropout(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            return nn.Dropout(0.3, deterministic=not train)(nn.Dense(5)(x))
    dm = Dropout()
    vd = dm.init(jax.random.key(5), x, False)
    ps.append(Program("dropout_apply", lambda v, x, k: dm.apply(v, x, True, rngs={"dropout": k}),
                      [vd, x, jax.random.PRNGKey(7)], "nn.Dropout with rngs={'dropout': key} (a raw uint32 key)"))
    return ps
