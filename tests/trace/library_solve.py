"""A lineax solve of an operator that is a function closing over a matrix,
as lineax's docs write it. lineax's `linear_solve` prints its solver and
operator as Python objects (the operator's matrix as a constant, by name
only), so its text cannot be built; the session records what equinox lowers
it as, its implementation traced at the equation's operands, beside the
text."""
import jax
import jax.numpy as jnp
import lineax as lx

MATRIX = jnp.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, 1.0, 0.0],
                    [0.0, 1.0, 5.0, 2.0], [0.5, 0.0, 2.0, 6.0]], dtype=jnp.float32)


@jax.jit
def solve(b):
    operator = lx.FunctionLinearOperator(lambda x: MATRIX @ x + 0.5 * x,
                                         jax.ShapeDtypeStruct((4,), jnp.float32))
    return lx.linear_solve(operator, b, lx.LU()).value


print(solve(jnp.array([1.0, -2.0, 0.5, 3.0], dtype=jnp.float32)).tolist())
