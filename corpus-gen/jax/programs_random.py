"""random_test: the samplers and key operations it tests, with each PRNG
implementation, typed keys and raw uint32 key data, several dtypes and shapes,
and under vmap, jit and scan as the test does."""
from functools import partial
import numpy as np
import jax
import jax.numpy as jnp
from jax import random
from common import dtname
from gen import Program

FLOAT_SAMPLERS = {
    "uniform": lambda k, s, d: random.uniform(k, s, d, minval=-1, maxval=2),
    "normal": lambda k, s, d: random.normal(k, s, d),
    "truncated_normal": lambda k, s, d: random.truncated_normal(k, -1, 1, s, d),
    "exponential": lambda k, s, d: random.exponential(k, s, d),
    "laplace": lambda k, s, d: random.laplace(k, s, d),
    "logistic": lambda k, s, d: random.logistic(k, s, d),
    "cauchy": lambda k, s, d: random.cauchy(k, s, d),
    "gumbel": lambda k, s, d: random.gumbel(k, s, d),
    "gamma": lambda k, s, d: random.gamma(k, jnp.full(s, 2.0, d), s, d),
    "loggamma": lambda k, s, d: random.loggamma(k, 0.5, s, d),
    "beta": lambda k, s, d: random.beta(k, 2.0, 3.0, s, d),
    "dirichlet": lambda k, s, d: random.dirichlet(k, jnp.ones(3, d), s, d),
    "t": lambda k, s, d: random.t(k, 3.0, s, d),
    "chisquare": lambda k, s, d: random.chisquare(k, 2.0, s, d),
    "pareto": lambda k, s, d: random.pareto(k, 2.0, s, d),
    "weibull": lambda k, s, d: random.weibull_min(k, 1.0, 2.0, s, d),
    "maxwell": lambda k, s, d: random.maxwell(k, s, d),
    "double_sided_maxwell": lambda k, s, d: random.double_sided_maxwell(k, 0.0, 1.0, s, d),
    "rayleigh": lambda k, s, d: random.rayleigh(k, 1.0, s, d),
    "wald": lambda k, s, d: random.wald(k, 1.0, s, d),
    "triangular": lambda k, s, d: random.triangular(k, 0.0, 0.5, 1.0, s, d),
    "generalized_normal": lambda k, s, d: random.generalized_normal(k, 2.0, s, d),
    "ball": lambda k, s, d: random.ball(k, 3, 2, s, d),
    "orthogonal": lambda k, s, d: random.orthogonal(k, 3, s, d),
    "multivariate_normal": lambda k, s, d: random.multivariate_normal(k, jnp.zeros(2, d), jnp.eye(2, dtype=d), s, d),
}
OTHER = {
    "bernoulli": lambda k, s: random.bernoulli(k, 0.3, s),
    "randint": lambda k, s: random.randint(k, s, -5, 10),
    "randint_u8": lambda k, s: random.randint(k, s, 0, 100, jnp.uint8),
    "bits32": lambda k, s: random.bits(k, s),
    "bits8": lambda k, s: random.bits(k, s, jnp.uint8),
    "rademacher": lambda k, s: random.rademacher(k, s),
    "categorical": lambda k, s: random.categorical(k, jnp.log(jnp.array([0.2, 0.3, 0.5])), shape=s),
    "choice": lambda k, s: random.choice(k, 10, s),
    "choice_noreplace": lambda k, s: random.choice(k, jnp.arange(20), s, replace=False),
    "permutation": lambda k, s: random.permutation(k, 8),
    "poisson": lambda k, s: random.poisson(k, 3.0, s),
    "binomial": lambda k, s: random.binomial(k, 10.0, 0.3, s),
    "geometric": lambda k, s: random.geometric(k, 0.4, s),
    "split": lambda k, s: random.split(k, 3),
    "fold_in": lambda k, s: random.fold_in(k, 7),
    "split_vmap_fold_in": lambda k, s: jax.vmap(random.fold_in, (None, 0))(k, jnp.arange(3)),
    "scan_keys": lambda k, s: jax.lax.scan(lambda c, _: (random.split(c)[0], random.uniform(c)), k, None, length=3),
    "vmap_normal": lambda k, s: jax.vmap(lambda kk: random.normal(kk, s))(random.split(k, 2)),
}
IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


def typed(sampler):
    return lambda k, *a: sampler(k, *a)


def raw(sampler, impl):
    return lambda data, *a: sampler(random.wrap_key_data(data, impl=impl), *a)


def programs(mods):
    for impl in IMPLS:
        key = random.key(42, impl=impl)
        data = np.asarray(random.key_data(key))
        shapes = [(2, 3)]
        dts = [np.float32, jnp.bfloat16] if impl == "threefry2x32" else [np.float32]
        for sname, s in FLOAT_SAMPLERS.items():
            for shape in shapes:
                for dt in dts:
                    f = partial(lambda s_, sh, d, k: s_(k, sh, d), s, shape, dt)
                    base = f"{sname}_{impl}_{dtname(dt)}_{'x'.join(map(str, shape)) or 's'}"
                    src = f"random_test.py:{sname}"
                    yield Program(f"{base}_key", f, [key], src)
                    if dt == np.float32:
                        yield Program(f"{base}_data", raw(f, impl), [data], src)
            if impl == "threefry2x32":
                f = partial(lambda s_, k: s_(k, (), np.float32), s)
                yield Program(f"{sname}_{impl}_float32_s_key", f, [key], f"random_test.py:{sname}")
        for sname, s in OTHER.items():
            for shape in shapes:
                f = partial(lambda s_, sh, k: s_(k, sh), s, shape)
                base = f"{sname}_{impl}_{'x'.join(map(str, shape)) or 's'}"
                src = f"random_test.py:{sname}"
                yield Program(f"{base}_key", f, [key], src)
                yield Program(f"{base}_data", raw(f, impl), [data], src)
                if impl == "threefry2x32":
                    yield Program(f"{base}_legacy", f, [random.PRNGKey(1)], src)
