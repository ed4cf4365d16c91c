"""optax, as its docs write it: `tx = optax.adam(...)`, `opt_state = tx.init(params)`,
`updates, opt_state = tx.update(grads, opt_state, params)`, `optax.apply_updates`."""
import jax
import jax.numpy as jnp
import optax

from common import Program, f32, labels

DISTRIBUTIONS = ["optax"]


def params():
    return {"w": f32(1, 4, 3), "b": f32(2, 3)}


def loss(p, x, y):
    logits = x @ p["w"] + p["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def step_with(tx):
    def step(p, state, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        updates, state = tx.update(grads, state, p)
        return optax.apply_updates(p, updates), state, value
    return step


def programs():
    x, y = f32(3, 8, 4), labels(4, 8, 3)
    ps = []
    optimizers = {
        "adam": optax.adam(1e-2),
        "adamw": optax.adamw(learning_rate=1e-3, weight_decay=1e-4),
        "sgd_momentum": optax.sgd(learning_rate=0.1, momentum=0.9, nesterov=True),
        "clip_adam_chain": optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(), optax.scale(-1e-3)),
        "lion": optax.lion(1e-4),
        "rmsprop": optax.rmsprop(1e-3),
        "adagrad": optax.adagrad(1e-1),
        "adabelief": optax.adabelief(1e-3),
        "warmup_cosine_adam": optax.adam(optax.warmup_cosine_decay_schedule(0.0, 1e-2, 10, 100, 1e-4)),
        "lamb": optax.lamb(1e-3),
        "noisy_sgd": optax.noisy_sgd(1e-2, seed=0),
    }
    for name, tx in optimizers.items():
        p = params()
        state = tx.init(p)
        build = all(not jnp.issubdtype(jnp.asarray(leaf).dtype, jax.dtypes.prng_key)
                    for leaf in jax.tree_util.tree_leaves(state))
        ps.append(Program(f"{name}_step", step_with(tx), [p, state, x, y],
                          f"optax.{name}: value_and_grad, tx.update, optax.apply_updates", build=build))
    lbfgs = optax.lbfgs()
    p0 = params()

    def lbfgs_step(p, state):
        f = lambda q: loss(q, x, y)  # noqa: E731
        value, grad = optax.value_and_grad_from_state(f)(p, state=state)
        updates, state = lbfgs.update(grad, state, p, value=value, grad=grad, value_fn=f)
        return optax.apply_updates(p, updates), state
    ps.append(Program("lbfgs_step", lbfgs_step, [p0, lbfgs.init(p0)],
                      "optax.lbfgs with its zoom line search (the optax docs' L-BFGS loop body)"))
    ms = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=4)
    ps.append(Program("multisteps_adam_step", step_with(ms), [params(), ms.init(params()), x, y],
                      "optax.MultiSteps: gradient accumulation over 4 steps"))
    logits, onehot = f32(5, 6, 5), jax.nn.one_hot(labels(6, 6, 5), 5)
    ps.append(Program("losses", lambda lo, oh, a, b: (
        optax.softmax_cross_entropy(lo, oh).mean(), optax.sigmoid_binary_cross_entropy(lo, oh).mean(),
        optax.l2_loss(a, b).mean(), optax.huber_loss(a, b, delta=0.5).mean(),
        optax.cosine_similarity(a, b), optax.smooth_labels(oh, 0.1)),
        [logits, onehot, f32(7, 6, 5), f32(8, 6, 5)], "optax losses: softmax/sigmoid cross-entropy, l2, huber, cosine"))
    ps.append(Program("global_norm_clip", lambda g: optax.clip_by_global_norm(0.5).update(g, optax.EmptyState())[0],
                      [params()], "optax.clip_by_global_norm on a gradient pytree"))
    ps.append(Program("softmax_xent_poly", lambda lo, y: optax.softmax_cross_entropy_with_integer_labels(lo, y).mean(),
                      [f32(9, 6, 5), labels(10, 6, 5)], "the loss exported with a symbolic batch",
                      poly=["b, 5", "b"]))
    return ps
