"""Writes the jaxprs of the run-time benchmark's JAX cases at every size:
`jaxprs/NAME.SIZE.jaxpr`, printed as the corpus generator prints them
(`str(jax.make_jaxpr(f)(*args))`, 64-bit types off). Catalyst cases use the
corpus's jaxprs as they are (one jaxpr serves every size).

usage: python bench/runtime/gen.py CORPUS_DIR   (in the oracle's Python, jax 0.10.2)
"""
import os
import sys

import numpy as np

corpus = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(corpus, "jax"))
sys.path.insert(0, here)

import jax  # noqa: E402
from programs_jax import PROGRAMS  # noqa: E402
from cases import JAX  # noqa: E402

jax.config.update("jax_enable_x64", False)
out = os.path.join(here, "jaxprs")
os.makedirs(out, exist_ok=True)
for name, sizes in JAX.items():
    fn = PROGRAMS[name][0]
    for label, makers in sizes:
        args = [m(np.random.default_rng(0)) for m in makers]
        specs = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args]
        closed = jax.make_jaxpr(fn)(*specs)
        assert not closed.consts, f"{name}: constants would need values"
        with open(os.path.join(out, f"{name}.{label}.jaxpr"), "w") as f:
            f.write(str(closed) + "\n")
        print(name, label, len(closed.jaxpr.eqns), "eqns")
