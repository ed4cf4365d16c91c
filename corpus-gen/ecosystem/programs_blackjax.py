"""blackjax, as its docs write it: `blackjax.nuts(logdensity_fn, step_size,
inverse_mass_matrix)`, `kernel.init(position)`, `kernel.step(rng_key, state)`."""
import jax
import jax.numpy as jnp
import jax.scipy.stats as stats
import blackjax

from common import Program, f32

DISTRIBUTIONS = ["blackjax"]


def logdensity(x):
    """The docs' example: a 2-d Gaussian-like target with a Normal prior."""
    return stats.norm.logpdf(x["loc"], 1.0, 2.0).sum() + stats.norm.logpdf(x["scale"], 0.0, 1.0).sum() \
        + stats.norm.logpdf(DATA, x["loc"], jnp.exp(x["scale"])).sum()


DATA = f32(0, 6) * 2.0 + 1.0


def programs():
    ps = []
    position = {"loc": jnp.float32(0.5), "scale": jnp.float32(0.1)}
    imm = jnp.ones(2, jnp.float32)
    key = jax.random.PRNGKey(3)
    kernels = {
        "nuts": blackjax.nuts(logdensity, 0.1, imm),
        "hmc": blackjax.hmc(logdensity, 0.1, imm, num_integration_steps=5),
        "mala": blackjax.mala(logdensity, 0.05),
        "rmh": blackjax.rmh(logdensity, blackjax.mcmc.random_walk.normal(0.2 * jnp.ones(2))),
        "barker": blackjax.barker_proposal(logdensity, 0.1),
    }
    for name, k in kernels.items():
        state = k.init(position)
        ps.append(Program(f"{name}_step", lambda key, state, k=k: k.step(key, state), [key, state],
                          f"blackjax.{name}: one kernel.step (the docs' inference loop body)"))

    def inference_loop(key, position):
        nuts = blackjax.nuts(logdensity, 0.1, imm)
        state = nuts.init(position)

        def one_step(state, key):
            state, info = nuts.step(key, state)
            return state, state.position
        return jax.lax.scan(one_step, state, jax.random.split(key, 3))[1]
    ps.append(Program("nuts_inference_loop", inference_loop, [key, position],
                      "the docs' inference_loop: lax.scan over nuts.step"))
    ps.append(Program("logdensity_grad", jax.value_and_grad(logdensity), [position], "the target's value and gradient"))

    def sgld(key, w, x, y):
        def logprior(p):
            return stats.norm.logpdf(p, 0.0, 1.0).sum()

        def loglik(p, batch):
            xb, yb = batch
            return stats.norm.logpdf(yb, xb @ p, 1.0).sum()
        grad_fn = blackjax.sgmcmc.gradients.grad_estimator(logprior, loglik, 100)
        sgld = blackjax.sgld(grad_fn)
        return sgld.step(key, w, (x, y), 1e-3)
    ps.append(Program("sgld_step", sgld, [key, f32(1, 3), f32(2, 5, 3), f32(3, 5)],
                      "blackjax.sgld with grad_estimator on a minibatch"))

    def mclmc(key, position):
        k = blackjax.mclmc(logdensity, L=1.0, step_size=0.1)
        state = k.init(position, jax.random.PRNGKey(0))
        return k.step(key, state)
    ps.append(Program("mclmc_step", mclmc, [key, position], "blackjax.mclmc init and step"))
    return ps
