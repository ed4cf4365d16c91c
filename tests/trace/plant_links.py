"""Plants a symbolic link in its own session folder while it is traced, at
the name the capture writes next (argv[2]: `jaxpr` for the jaxpr of
`scale`, `session` for session.json), pointing at argv[1]; then traces
`scale`. The capture must write through neither."""

import os
import sys

import jax
import jax.numpy as jnp

session = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".jaxpr-session")
name = {"jaxpr": "scale.jaxpr", "session": "session.json"}[sys.argv[2]]
os.symlink(sys.argv[1], os.path.join(session, name))


@jax.jit
def scale(x):
    return x * 2


print(scale(jnp.ones(2)))
