"""numpyro, as its docs write it: models with `numpyro.sample`/`numpyro.plate`,
their potential energy (`numpyro.infer.util`), log densities of distributions,
one step of HMC/NUTS kernels, an SVI step."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import HMC, NUTS, SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal
from numpyro.infer.util import initialize_model, log_density

from common import Program, f32

DISTRIBUTIONS = ["numpyro"]

J = 8
Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], np.float32)
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], np.float32)


def eight_schools(sigma, y=None):
    """The eight schools model of numpyro's README."""
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", J):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)


def regression(x, y=None):
    """Bayesian linear regression (the numpyro tutorial's divorce-rate model)."""
    a = numpyro.sample("a", dist.Normal(0.0, 0.2))
    b = numpyro.sample("b", dist.Normal(0.0, 0.5))
    s = numpyro.sample("sigma", dist.Exponential(1.0))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("obs", dist.Normal(a + b * x, s), obs=y)


def programs():
    ps = []
    key = jax.random.PRNGKey(0)
    init, potential_fn, _, _ = initialize_model(key, eight_schools, model_args=(SIGMA, Y))
    z = init.z
    ps.append(Program("eight_schools_potential", potential_fn, [z],
                      "potential_fn of the eight schools model (initialize_model)"))
    ps.append(Program("eight_schools_potential_grad", jax.grad(potential_fn), [z],
                      "its gradient (what HMC computes each leapfrog step)"))

    def log_joint(mu, tau, theta):
        return log_density(eight_schools, (SIGMA,), {"y": Y}, {"mu": mu, "tau": tau, "theta": theta})[0]
    ps.append(Program("eight_schools_log_density", log_joint, [jnp.float32(1.0), jnp.float32(2.0), f32(1, 8)],
                      "numpyro.infer.util.log_density"))

    x = f32(2, 10)
    y = 0.3 + 0.7 * x + 0.1 * f32(3, 10)
    init_r, pot_r, _, _ = initialize_model(key, regression, model_args=(x,), model_kwargs={"y": y})
    ps.append(Program("regression_potential", pot_r, [init_r.z], "potential_fn of a linear regression"))

    for name, kernel in [("hmc", HMC(eight_schools, step_size=0.1, num_steps=4, adapt_step_size=False)),
                         ("nuts", NUTS(eight_schools, step_size=0.1, adapt_step_size=False, max_tree_depth=3))]:
        state = kernel.init(key, 0, None, model_args=(SIGMA,), model_kwargs={"y": Y})

        def sample(state, kernel=kernel):
            return kernel.sample(state, (SIGMA,), {"y": Y})
        ps.append(Program(f"{name}_sample_step", sample, [state],
                          f"one {name.upper()} kernel.sample step of eight schools (MCMC's loop body)"))

    guide = AutoNormal(regression)
    svi = SVI(regression, guide, numpyro.optim.Adam(0.01), Trace_ELBO())
    svi_state = svi.init(key, x, y=y)

    def svi_update(svi_state):
        return svi.update(svi_state, x, y=y)
    ps.append(Program("svi_autonormal_step", svi_update, [svi_state], "one svi.update with AutoNormal and Trace_ELBO"))

    v = jnp.abs(f32(4, 5)) + 0.5
    ps.append(Program("distribution_log_probs", lambda v: (
        dist.Normal(0.0, 2.0).log_prob(v), dist.Gamma(2.0, 3.0).log_prob(v), dist.Beta(2.0, 3.0).log_prob(v / 4.0),
        dist.StudentT(4.0, 0.0, 1.0).log_prob(v), dist.Poisson(3.0).log_prob(jnp.floor(v)),
        dist.Dirichlet(jnp.ones(5)).log_prob(v / v.sum()), dist.LogNormal(0.0, 1.0).log_prob(v)),
        [v], "log_prob of Normal, Gamma, Beta, StudentT, Poisson, Dirichlet, LogNormal"))
    cov = jnp.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]], jnp.float32)
    ps.append(Program("mvn_log_prob", lambda m, c, v: dist.MultivariateNormal(m, covariance_matrix=c).log_prob(v),
                      [f32(5, 3), cov, f32(6, 4, 3)], "MultivariateNormal(covariance_matrix=...).log_prob"))
    ps.append(Program("sample_normal", lambda k: dist.Normal(jnp.zeros(4), 1.0).sample(k, (3,)),
                      [jax.random.PRNGKey(1)], "Normal.sample with a raw PRNGKey"))
    ps.append(Program("regression_log_density_poly", lambda a, b, s, x, y: log_density(
        regression, (x,), {"y": y}, {"a": a, "b": b, "sigma": s})[0],
        [jnp.float32(0.1), jnp.float32(0.5), jnp.float32(1.0), x, y], "the regression's log density, n data points",
        poly=["", "", "", "n", "n"]))
    return ps
