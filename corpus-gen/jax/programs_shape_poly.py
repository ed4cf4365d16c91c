"""shape_poly_test: every harness of `_POLY_SHAPE_TEST_HARNESSES` that JAX exports
(those without `expect_error`), traced at its symbolic shapes."""
from common import rng_for
from gen import Program


def programs(mods):
    t = mods["shape_poly_test"]
    for h in t._flatten_harnesses(t._POLY_SHAPE_TEST_HARNESSES):
        if h.expect_error is not None:
            continue
        name = f"{h.group_name}_{h.name}" if h.name else h.group_name
        args = h.dyn_args_maker(rng_for(name))
        yield Program(name, h.dyn_fun, args, f"shape_poly_test.py:{h.fullname}",
                      poly=list(h.polymorphic_shapes), constraints=h.symbolic_constraints,
                      flags=h.override_jax_config_flags)
