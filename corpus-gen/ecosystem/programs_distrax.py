"""distrax, as its docs write it: distributions and bijectors with
`log_prob`, `sample(seed=...)`, `sample_and_log_prob`, `Transformed`, `Chain`."""
import jax
import jax.numpy as jnp
import distrax

from common import Program, f32

DISTRIBUTIONS = ["distrax", "tfp-nightly"]


def programs():
    ps = []
    x = f32(1, 5)
    ps.append(Program("normal_log_prob", lambda m, s, x: distrax.Normal(m, s).log_prob(x),
                      [jnp.float32(0.5), jnp.float32(1.5), x], "distrax.Normal.log_prob"))
    ps.append(Program("mvn_tri_log_prob", lambda loc, tril, x: distrax.MultivariateNormalTri(loc, tril).log_prob(x),
                      [f32(2, 3), jnp.tril(f32(3, 3, 3)) + 3 * jnp.eye(3, dtype=jnp.float32), f32(4, 4, 3)],
                      "distrax.MultivariateNormalTri"))
    ps.append(Program("sample_and_log_prob", lambda key, m: distrax.Normal(m, 1.0).sample_and_log_prob(
        seed=key, sample_shape=(3,)), [jax.random.PRNGKey(0), f32(5, 2)], "sample_and_log_prob with a PRNGKey"))
    ps.append(Program("transformed_chain", lambda s, x: distrax.Transformed(
        distrax.Normal(0.0, 1.0), distrax.Chain([distrax.ScalarAffine(shift=0.5, scale=s), distrax.Tanh()])).log_prob(x),
        [jnp.float32(2.0), 0.3 * f32(6, 5)], "Transformed(Normal, Chain([ScalarAffine, Tanh]))"))
    ps.append(Program("categorical_entropy_kl", lambda a, b: (distrax.Categorical(logits=a).entropy(),
                                                              distrax.Categorical(logits=a).kl_divergence(
                                                                  distrax.Categorical(logits=b))),
                      [f32(7, 4, 6), f32(8, 4, 6)], "Categorical entropy and kl_divergence"))
    ps.append(Program("mixture_log_prob", lambda w, m, x: distrax.MixtureSameFamily(
        distrax.Categorical(logits=w), distrax.Normal(m, 1.0)).log_prob(x),
        [f32(9, 3), f32(10, 3), x], "MixtureSameFamily of Normals"))
    ps.append(Program("masked_coupling_flow", lambda w, x: distrax.MaskedCoupling(
        mask=jnp.array([True, False, True, False]),
        conditioner=lambda z: jnp.tanh(z @ w),
        bijector=lambda p: distrax.ScalarAffine(shift=p)).forward_and_log_det(x),
        [0.3 * f32(11, 4, 4), f32(12, 2, 4)], "a RealNVP-style MaskedCoupling layer"))
    return ps
