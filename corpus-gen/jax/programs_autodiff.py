"""lax_autodiff_test: every op of `LAX_GRAD_OPS` (and `LAX_GRAD_OPS_WITH_OUT_DTYPE`)
differentiated the ways the test does (jvp, vjp, grad, second order) at its dtypes."""
import numpy as np
import jax
import jax.numpy as jnp
from common import runnable_dtypes, rng_for, dtname
from gen import Program


def modes(op, nargs, complex_in):
    ones = lambda xs: tuple(jnp.ones_like(x) for x in xs)
    out = {
        "jvp": lambda *xs: jax.jvp(op, xs, ones(xs)),
        "vjp": lambda *xs: jax.vjp(op, *xs)[1](op(*xs)),
        "linearize": lambda *xs: jax.linearize(op, *xs)[1](*ones(xs)),
    }
    if not complex_in:
        scalar = lambda *xs: jnp.sum(jnp.real(op(*xs)))
        out["grad"] = jax.grad(scalar, argnums=tuple(range(nargs)))
        out["grad2"] = jax.grad(lambda *xs: jnp.sum(jax.grad(scalar)(*xs)))
    return out


def programs(mods):
    t = mods["lax_autodiff_test"]
    for spec in t.LAX_GRAD_OPS + t.LAX_GRAD_OPS_WITH_OUT_DTYPE:
        for dt in runnable_dtypes(spec.dtypes):
            for shape in [(), (3, 4)]:
                name = f"{spec.name}_{dtname(dt)}_{'x'.join(map(str, shape)) or 's'}"
                rng = spec.rng_factory(rng_for(name))
                args = [rng(shape, dt) for _ in range(spec.nargs)]
                cplx = np.issubdtype(dt, np.complexfloating)
                for mode, fn in modes(spec.op, spec.nargs, cplx).items():
                    if mode == "grad2" and spec.order < 2:
                        continue
                    yield Program(f"{mode}_{name}", fn, args, f"lax_autodiff_test.py:{spec.name}")
