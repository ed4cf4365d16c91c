"""lineax, as its docs write it: `lx.linear_solve(operator, vector, solver)` with
`MatrixLinearOperator` (and tags), `FunctionLinearOperator`, and its solvers."""
import jax
import jax.numpy as jnp
import lineax as lx

from common import Program, f32

DISTRIBUTIONS = ["lineax", "equinox"]


def spd(seed, n):
    a = f32(seed, n, n)
    return a @ a.T + n * jnp.eye(n, dtype=jnp.float32)


def programs():
    ps = []
    a, b = f32(1, 4, 4) + 4 * jnp.eye(4, dtype=jnp.float32), f32(2, 4)
    s = spd(3, 4)

    def solve(solver, tags=()):
        return lambda m, v: lx.linear_solve(lx.MatrixLinearOperator(m, tags), v, solver).value
    ps.append(Program("lu_solve", solve(lx.LU()), [a, b], "the quickstart: MatrixLinearOperator, LU"))
    ps.append(Program("autolinearsolve", solve(lx.AutoLinearSolver(well_posed=True)), [a, b],
                      "AutoLinearSolver(well_posed=True)"))
    ps.append(Program("cholesky_psd", solve(lx.Cholesky(), lx.positive_semidefinite_tag), [s, b],
                      "Cholesky with positive_semidefinite_tag"))
    ps.append(Program("cg_psd", solve(lx.CG(rtol=1e-5, atol=1e-5), lx.positive_semidefinite_tag), [s, b],
                      "conjugate gradient"))
    ps.append(Program("gmres", solve(lx.GMRES(rtol=1e-5, atol=1e-5, restart=4)), [a, b], "GMRES"))
    ps.append(Program("bicgstab", solve(lx.BiCGStab(rtol=1e-5, atol=1e-5)), [s, b], "BiCGStab (on a well-conditioned matrix)"))
    tall = f32(4, 6, 3)
    ps.append(Program("qr_least_squares", solve(lx.QR()), [tall, f32(5, 6)], "QR least squares (a tall matrix)"))
    ps.append(Program("svd_least_squares", solve(lx.SVD()), [tall, f32(5, 6)], "SVD least squares"))
    ps.append(Program("diagonal", lambda d, v: lx.linear_solve(lx.DiagonalLinearOperator(d), v).value,
                      [jnp.abs(f32(6, 5)) + 1.0, f32(7, 5)], "DiagonalLinearOperator"))
    ps.append(Program("tridiagonal", lambda d, lo, up, v: lx.linear_solve(
        lx.TridiagonalLinearOperator(d, lo, up), v, lx.Tridiagonal()).value,
        [jnp.full(5, 4.0, jnp.float32), f32(8, 4), f32(9, 4), f32(10, 5)], "TridiagonalLinearOperator, Tridiagonal"))

    def function_op(m, v):
        op = lx.FunctionLinearOperator(lambda x: m @ x + 0.5 * x, jax.ShapeDtypeStruct((4,), jnp.float32))
        return lx.linear_solve(op, v, lx.LU()).value
    ps.append(Program("function_operator_lu", function_op, [a, b], "FunctionLinearOperator, materialised for LU"))
    ps.append(Program("lu_solve_grad", jax.grad(lambda m, v: jnp.sum(solve(lx.LU())(m, v) ** 2), argnums=(0, 1)),
                      [a, b], "the gradient of a linear solve (its custom JVP/transpose)"))
    ps.append(Program("jacobian_operator", lambda x, v: lx.linear_solve(
        lx.JacobianLinearOperator(lambda y, args: jnp.sin(y) + 2 * y, x), v).value,
        [f32(11, 4), f32(12, 4)], "JacobianLinearOperator"))
    ps.append(Program("lu_solve_poly", solve(lx.LU()), [a, b], "LU on a matrix of symbolic size",
                      poly=["n, n", "n"]))
    return ps
