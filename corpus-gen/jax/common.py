"""Helpers shared by the program modules: dtypes JAX runs here, shapes, inputs."""
import numpy as np
import jax
from jax._src import dtypes


def runnable_dtypes(dts, limit=None):
    """The dtypes of a test table that this JAX (x64 off) keeps, in order, deduplicated."""
    out = []
    for dt in dts:
        c = dtypes.canonicalize_dtype(dt)
        if c not in out:
            out.append(c)
    return out[:limit] if limit else out


def rng_for(name):
    """A RandomState seeded by the program's name, so regeneration is reproducible."""
    return np.random.RandomState(abs(hash_str(name)) % (2**31))


def hash_str(s):
    h = 0
    for ch in s:
        h = (h * 131 + ord(ch)) % (2**61 - 1)
    return h


def dtname(dt):
    return np.dtype(dt).name
