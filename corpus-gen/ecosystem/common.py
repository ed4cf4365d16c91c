"""Inputs of the ecosystem programs: seeded, small, as the libraries' examples
make them."""
import numpy as np

from folder import Program  # noqa: F401 (each programs_GROUP module builds Programs)


def rng(seed):
    return np.random.RandomState(seed)


def f32(seed, *shape):
    return rng(seed).standard_normal(shape).astype(np.float32)


def labels(seed, n, classes):
    return rng(seed).randint(0, classes, size=(n,)).astype(np.int32)


def leaves_are_arrays(tree):
    """Whether every leaf of `tree` is a plain array (no key, no object):
    such a program is in the build set."""
    import jax
    import jax.numpy as jnp
    return all(isinstance(x, (np.ndarray, jax.Array)) and not jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
               for x in jax.tree_util.tree_leaves(tree))
