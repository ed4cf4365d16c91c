"""TensorFlow Probability on JAX (`tensorflow_probability.substrates.jax`), as its
docs write it: `tfd` distributions, `tfb` bijectors, `tfp.math`, an MCMC kernel step."""
import jax
import jax.numpy as jnp
from tensorflow_probability.substrates import jax as tfp

from common import Program, f32

DISTRIBUTIONS = ["tfp-nightly"]
tfd, tfb = tfp.distributions, tfp.bijectors


def programs():
    ps = []
    x = jnp.abs(f32(1, 5)) + 0.2
    ps.append(Program("distribution_log_probs", lambda x: (
        tfd.Normal(0.0, 1.0).log_prob(x), tfd.Gamma(2.0, 1.5).log_prob(x), tfd.Weibull(1.5, 2.0).log_prob(x),
        tfd.VonMises(0.0, 2.0).log_prob(x), tfd.Laplace(0.0, 1.0).log_prob(x)),
        [x], "tfd log_prob of Normal, Gamma, Weibull, VonMises, Laplace"))
    ps.append(Program("mvn_tril_log_prob", lambda loc, scale, v: tfd.MultivariateNormalTriL(loc, scale).log_prob(v),
                      [f32(2, 3), jnp.tril(f32(3, 3, 3)) + 3 * jnp.eye(3, dtype=jnp.float32), f32(4, 4, 3)],
                      "tfd.MultivariateNormalTriL"))
    ps.append(Program("joint_distribution_log_prob", lambda mu, z: tfd.JointDistributionSequential([
        tfd.Normal(0.0, 1.0), lambda m: tfd.Independent(tfd.Normal(m * jnp.ones(4), 1.0), 1)]).log_prob([mu, z]),
        [jnp.float32(0.3), f32(5, 4)], "tfd.JointDistributionSequential"))
    ps.append(Program("bijector_chain", lambda x: tfb.Chain([tfb.Exp(), tfb.Shift(1.0), tfb.Scale(2.0)]).forward(x),
                      [f32(6, 5)], "tfb.Chain of Exp, Shift, Scale"))
    ps.append(Program("math_special", lambda x: (tfp.math.bessel_ive(1.5, x), tfp.math.log1mexp(-x),
                                                 tfp.math.softplus_inverse(x)),
                      [x], "tfp.math.bessel_ive, log1mexp, softplus_inverse"))

    def hmc_step(state, key):
        target = tfd.MultivariateNormalDiag(jnp.zeros(3), jnp.ones(3))
        kernel = tfp.mcmc.HamiltonianMonteCarlo(target.log_prob, step_size=0.1, num_leapfrog_steps=3)
        results = kernel.bootstrap_results(state)
        return kernel.one_step(state, results, seed=key)[0]
    ps.append(Program("hmc_one_step", hmc_step, [f32(7, 3), jax.random.PRNGKey(0)],
                      "tfp.mcmc.HamiltonianMonteCarlo.one_step"))
    return ps
