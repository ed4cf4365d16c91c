"""jaxopt, as its docs write it: `solver = jaxopt.LBFGS(fun=..., maxiter=...)`,
`solver.run(init_params, *args).params`, and its implicit differentiation."""
import jax
import jax.numpy as jnp
import jaxopt
from jaxopt import objective, prox

from common import Program, f32

DISTRIBUTIONS = ["jaxopt"]


def ridge(w, l2reg, X, y):
    residuals = X @ w - y
    return jnp.mean(residuals ** 2) + 0.5 * l2reg * jnp.sum(w ** 2)


def programs():
    ps = []
    X, y = f32(1, 10, 3), f32(2, 10)
    w0 = jnp.zeros(3, jnp.float32)
    ps.append(Program("lbfgs_ridge", lambda w0, X, y: jaxopt.LBFGS(fun=ridge, maxiter=20).run(w0, 0.1, X, y).params,
                      [w0, X, y], "jaxopt.LBFGS on ridge regression"))
    ps.append(Program("gradient_descent_ridge",
                      lambda w0, X, y: jaxopt.GradientDescent(fun=ridge, maxiter=20).run(w0, 0.1, X, y).params,
                      [w0, X, y], "jaxopt.GradientDescent"))
    ps.append(Program("lasso_proximal_gradient", lambda w0, X, y: jaxopt.ProximalGradient(
        fun=objective.least_squares, prox=prox.prox_lasso, maxiter=30).run(w0, hyperparams_prox=0.1, data=(X, y)).params,
        [w0, X, y], "jaxopt.ProximalGradient with prox_lasso (the docs' lasso)"))
    ps.append(Program("ridge_implicit_grad", jax.grad(lambda l2, X, y: jnp.sum(
        jaxopt.LBFGS(fun=ridge, maxiter=20, implicit_diff=True).run(jnp.zeros(3), l2, X, y).params ** 2)),
        [jnp.float32(0.1), X, y], "the gradient of the solution with respect to l2reg (implicit differentiation)"))
    ps.append(Program("bisection", lambda c: jaxopt.Bisection(optimality_fun=lambda x, c: x ** 3 - c,
                                                              lower=0.0, upper=3.0, maxiter=30, check_bracket=False).run(c=c).params,
                      [jnp.float32(2.0)], "jaxopt.Bisection"))

    def gn(p0, x, y):
        res = lambda p, x, y: p[0] * jnp.exp(-p[1] * x) - y  # noqa: E731
        return jaxopt.GaussNewton(residual_fun=res, maxiter=10).run(p0, x, y).params
    xs = jnp.linspace(0, 1, 8, dtype=jnp.float32)
    ys = 2.0 * jnp.exp(-1.5 * xs)
    ps.append(Program("gauss_newton_fit", gn, [jnp.array([1.0, 1.0], jnp.float32), xs, ys], "jaxopt.GaussNewton"))

    def lm(p0, x, y):
        res = lambda p, x, y: p[0] * jnp.exp(-p[1] * x) - y  # noqa: E731
        return jaxopt.LevenbergMarquardt(residual_fun=res, maxiter=10).run(p0, x, y).params
    ps.append(Program("levenberg_marquardt_fit", lm, [jnp.array([1.0, 1.0], jnp.float32), xs, ys],
                      "jaxopt.LevenbergMarquardt"))
    ps.append(Program("logreg_bfgs", lambda W, X, y: jaxopt.BFGS(
        fun=objective.multiclass_logreg_with_intercept, maxiter=10).run((W, jnp.zeros(3)), data=(X, y)).params,
        [jnp.zeros((3, 3), jnp.float32), X, jnp.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], jnp.int32)],
        "jaxopt.BFGS on multiclass logistic regression"))

    def box_qp(Q, c):
        qp = jaxopt.BoxCDQP(maxiter=50)
        return qp.run(jnp.zeros(3), params_obj=(Q, c), params_ineq=(-jnp.ones(3), jnp.ones(3))).params
    Q = jnp.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.1], [0.0, 0.1, 3.0]], jnp.float32)
    ps.append(Program("box_cd_qp", box_qp, [Q, f32(3, 3)], "jaxopt.BoxCDQP"))
    ps.append(Program("fixed_point_anderson", lambda x0: jaxopt.AndersonAcceleration(
        fixed_point_fun=lambda x: jnp.cos(x), maxiter=30, tol=1e-5).run(x0).params, [jnp.ones(4, jnp.float32)],
        "jaxopt.AndersonAcceleration"))
    return ps
