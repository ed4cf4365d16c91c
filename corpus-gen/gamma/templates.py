"""Writes crates/lower/src/gamma/DTYPE_SPACE.jaxpr: JAX's own Gamma sampler for one key
and one alpha (`jax._src.random.core._gamma_one`, Marsaglia and Tsang's rejection loop
over split keys), printed by the JAX that runs this script with every nested jaxpr
inline (no shared `let`s), for each floating-point dtype and both `log_space`s. The
build rewrites `random_gamma` into a `scan` of this jaxpr over the keys JAX's
`_gamma_impl` splits (crates/lower/src/gamma.rs).

usage: python templates.py OUT_DIR    (jax 0.10.2: ../shared/oracle/setup.sh's venv)
"""
import os
import sys

import jax
import jax.numpy as jnp
from jax._src import core
from jax._src.random import core as random_core

jax.config.update("jax_enable_x64", True)


def inline_text(closed):
    context = core.JaxprPpContext()
    settings = core.JaxprPpSettings(source_info=False, print_shapes=True, custom_pp_eqn_rules=True,
                                    name_stack=False, print_effects=False)
    return core.pp_jaxpr(closed.jaxpr, context, settings).format() + "\n"


def main(out):
    os.makedirs(out, exist_ok=True)
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        for log_space in (False, True):
            closed = jax.make_jaxpr(
                lambda k, a: random_core._gamma_one(k, a, log_space=log_space)
            )(jax.random.key(0), jnp.asarray(2.0, dtype))
            assert not closed.consts, closed.consts
            name = f"{dtype}_{'log' if log_space else 'plain'}.jaxpr"
            with open(os.path.join(out, name), "w") as fh:
                fh.write(inline_text(closed))
            print(name)


if __name__ == "__main__":
    main(sys.argv[1])
