"""Prints the parser fixtures of crates/syntax/tests/printed/ that each JAX
version prints differently: parameter values JAX prints with `str()`,
untyped literals (jax <= 0.5), `float0` literals, and `_` operands.

Run it with each version in its own virtual environment, writing into the
fixture folder:

    python3 -m venv /tmp/venv-jax-0.4.30
    /tmp/venv-jax-0.4.30/bin/pip install jax==0.4.30 jaxlib==0.4.30 'numpy<2'
    JAX_PLATFORMS=cpu /tmp/venv-jax-0.4.30/bin/python gen.py ../../crates/syntax/tests/printed

and likewise with jax 0.5.3 and 0.10.2 (which the files are named after:
`jax0430_*`, `jax053_*`, `jax_*`). Addresses (`at 0x7f...`) differ from
run to run.
"""
import sys, functools
import jax, jax.numpy as jnp, numpy as np
from jax import lax

V = jax.__version__
out = sys.argv[1]

def save(name, jaxpr):
    with open(f"{out}/{name}.jaxpr", "w") as f:
        f.write(str(jaxpr) + "\n")

@jax.jit
def inner(x):
    a = jnp.sin(x)
    b = jnp.cos(a)
    return a, b, a * b

def callback(x):
    return np.sin(x)

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    return f(primals[0]), jnp.cos(primals[0]) * tangents[0]

if V == "0.10.2":
    save("jax_pure_callback", jax.make_jaxpr(lambda x: jax.pure_callback(
        callback, jax.ShapeDtypeStruct((6,), jnp.float32), x))(jnp.ones(6)))
    save("jax_debug_print", jax.make_jaxpr(
        lambda x: (jax.debug.print("x = {}", x), x)[1])(jnp.ones(2)))
    mesh = jax.make_mesh((1,), ('x',), axis_types=(jax.sharding.AxisType.Explicit,))
    with jax.set_mesh(mesh):
        save("jax_ctx_mesh", jax.make_jaxpr(
            lambda x: jax.jit(lambda y: jnp.sin(y))(x) + 1)(jnp.ones(4)))
    comp = functools.partial(lax.composite, name="my.op")(lambda x, *, scale: x * scale)
    save("jax_composite_array_attribute", jax.make_jaxpr(
        lambda x: comp(x, scale=np.array(2.0, np.float32)))(jnp.ones(3)))
    save("jax_float0_literal", jax.make_jaxpr(jax.grad(
        lambda x, i: x * i, allow_int=True, argnums=(0, 1)))(1.0, 2))
    save("jax_dropped_operands", jax.make_jaxpr(lambda x: inner(x)[2])(jnp.ones(3)))
    save("jax_dropped_outputs", jax.make_jaxpr(lambda x: inner(x)[1])(jnp.ones(3)))
elif V == "0.4.30":
    save("jax0430_untyped_literals", jax.make_jaxpr(
        lambda x: jnp.where(x > 0, x, jnp.inf) + jnp.nan - jnp.inf)(1.0))
    save("jax0430_one_line_inf", jax.make_jaxpr(lambda x: jnp.maximum(x, -jnp.inf) * 2.0)(jnp.ones(3)))
    save("jax0430_float0_literal", jax.make_jaxpr(jax.grad(
        lambda x, i: x * i, allow_int=True, argnums=(0, 1)))(1.0, 2))
    save("jax0430_pure_callback", jax.make_jaxpr(lambda x: jax.pure_callback(
        callback, jax.ShapeDtypeStruct((6,), jnp.float32), x))(jnp.ones(6)))
    # Libraries' own primitives (pip install --no-deps equinox==0.11.4
    # lineax==0.0.5 jaxtyping==0.2.30 typeguard==2.13.3 typing_extensions).
    import equinox.internal as eqxi
    import lineax as lx
    save("jax0430_equinox_lineax", jax.make_jaxpr(lambda b: lx.linear_solve(
        lx.MatrixLinearOperator(jnp.eye(6) * 2.0), b).value)(jnp.ones(6)))
    save("jax0430_equinox_while", jax.make_jaxpr(lambda x: eqxi.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x),
        kind="checkpointed", max_steps=4))(jnp.ones(3)))
elif V == "0.5.3":
    save("jax053_custom_jvp", jax.make_jaxpr(jax.grad(lambda x: f(x) * 2.0))(1.0))
    save("jax053_untyped_literals", jax.make_jaxpr(
        lambda x: jnp.where(x > 0, x, jnp.inf) + jnp.nan - jnp.inf)(1.0))
