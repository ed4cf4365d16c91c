"""dm-haiku, as its docs write it: `hk.transform(forward)`, `init`/`apply`,
`hk.transform_with_state` for BatchNorm, `hk.dynamic_unroll` for RNNs."""
import jax
import haiku as hk
import optax

from common import Program, f32, labels

DISTRIBUTIONS = ["dm-haiku", "optax"]


def programs():
    ps = []
    x, y = f32(1, 8, 5), labels(2, 8, 3)

    def forward(x):
        return hk.nets.MLP([16, 8, 3])(x)
    mlp = hk.without_apply_rng(hk.transform(forward))
    params = mlp.init(jax.random.PRNGKey(0), x)
    ps.append(Program("mlp_apply", mlp.apply, [params, x], "hk.transform of hk.nets.MLP, apply"))

    opt = optax.sgd(0.1)

    def update(params, opt_state, x, y):
        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(mlp.apply(p, x), y).mean()
        grads = jax.grad(loss)(params)
        updates, opt_state = opt.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state
    ps.append(Program("mlp_sgd_update", update, [params, opt.init(params), x, y],
                      "the haiku README's update step with optax.sgd"))

    def cnn(x, is_training):
        x = hk.Conv2D(4, kernel_shape=3)(x)
        x = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(x, is_training)
        x = jax.nn.relu(x)
        x = hk.max_pool(x, window_shape=2, strides=2, padding="VALID")
        return hk.Linear(10)(hk.Flatten()(x))
    bn = hk.transform_with_state(cnn)
    img = f32(3, 2, 6, 6, 1)
    p, s = bn.init(jax.random.PRNGKey(1), img, True)
    ps.append(Program("cnn_batchnorm_train", lambda p, s, x: bn.apply(p, s, None, x, True), [p, s, img],
                      "hk.transform_with_state: Conv2D, BatchNorm in training (state updated)"))
    ps.append(Program("cnn_batchnorm_eval", lambda p, s, x: bn.apply(p, s, None, x, False)[0], [p, s, img],
                      "the same network in evaluation"))

    def rnn(xs):
        core = hk.LSTM(6)
        out, _ = hk.dynamic_unroll(core, xs, core.initial_state(xs.shape[1]))
        return hk.Linear(2)(out)
    lstm = hk.without_apply_rng(hk.transform(rnn))
    xs = f32(4, 5, 2, 3)
    pl = lstm.init(jax.random.PRNGKey(2), xs)
    ps.append(Program("lstm_dynamic_unroll", lstm.apply, [pl, xs], "hk.LSTM with hk.dynamic_unroll (time-major)"))

    def attention(x):
        return hk.MultiHeadAttention(num_heads=2, key_size=4, w_init=hk.initializers.VarianceScaling(1.0))(x, x, x)
    at = hk.without_apply_rng(hk.transform(attention))
    seq = f32(5, 4, 8)
    pa = at.init(jax.random.PRNGKey(3), seq)
    ps.append(Program("multi_head_attention", at.apply, [pa, seq], "hk.MultiHeadAttention"))

    def dropout(x):
        return hk.dropout(hk.next_rng_key(), 0.5, hk.Linear(4)(x))
    dr = hk.transform(dropout)
    pd = dr.init(jax.random.PRNGKey(4), x)
    ps.append(Program("dropout_apply", dr.apply, [pd, jax.random.PRNGKey(5), x], "hk.dropout with hk.next_rng_key"))

    def embed(ids):
        e = hk.Embed(vocab_size=10, embed_dim=4)(ids)
        return hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(e)
    em = hk.without_apply_rng(hk.transform(embed))
    ids = labels(6, 6, 10)
    ps.append(Program("embed_layernorm", em.apply, [em.init(jax.random.PRNGKey(6), ids), ids], "hk.Embed, hk.LayerNorm"))
    ps.append(Program("mlp_apply_poly", mlp.apply, [params, x], "the MLP exported with a symbolic batch",
                      poly=[None, "b, 5"]))
    return ps
