"""optimistix, as its docs write it: `optx.root_find`, `optx.minimise`,
`optx.least_squares`, `optx.fixed_point` with their solvers."""
import jax
import jax.numpy as jnp
import optimistix as optx

from common import Program, f32

DISTRIBUTIONS = ["optimistix", "lineax", "equinox"]


def rosenbrock(y, args):
    return jnp.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2)


def programs():
    ps = []
    y0 = jnp.array([0.5, 0.5, 0.5], jnp.float32)

    def newton(y0, c):
        fn = lambda y, args: y + 0.5 * jnp.tanh(y) - args  # noqa: E731
        return optx.root_find(fn, optx.Newton(rtol=1e-5, atol=1e-5), y0, args=c).value
    ps.append(Program("newton_root_find", newton, [y0, jnp.array([0.1, 0.2, -0.3], jnp.float32)],
                      "the docs' root find: optx.Newton"))

    def chord(y0, c):
        fn = lambda y, args: y ** 3 + y - args  # noqa: E731
        return optx.root_find(fn, optx.Chord(rtol=1e-5, atol=1e-5), y0, args=c, throw=False).value
    ps.append(Program("chord_root_find", chord, [y0, jnp.array([1.0, 2.0, 0.5], jnp.float32)], "optx.Chord"))

    def bisection(c):
        return optx.root_find(lambda y, args: y ** 3 - args, optx.Bisection(rtol=1e-5, atol=1e-5), 1.0, args=c,
                              options=dict(lower=0.0, upper=3.0)).value
    ps.append(Program("bisection", bisection, [jnp.float32(2.0)], "optx.Bisection with lower/upper options"))

    def bfgs(y0):
        return optx.minimise(rosenbrock, optx.BFGS(rtol=1e-5, atol=1e-5), y0, max_steps=256, throw=False).value
    ps.append(Program("bfgs_rosenbrock", bfgs, [y0], "optx.minimise with BFGS on Rosenbrock"))

    def nelder_mead(y0):
        return optx.minimise(rosenbrock, optx.NelderMead(rtol=1e-4, atol=1e-4), y0, max_steps=128, throw=False).value
    ps.append(Program("nelder_mead", nelder_mead, [y0], "optx.NelderMead"))

    xs = jnp.linspace(0.0, 1.0, 8, dtype=jnp.float32)
    ys = 2.0 * jnp.exp(-1.5 * xs) + 0.01 * f32(1, 8)

    def residuals(p, args):
        x, y = args
        return p[0] * jnp.exp(-p[1] * x) - y

    def lm(p0, x, y):
        return optx.least_squares(residuals, optx.LevenbergMarquardt(rtol=1e-5, atol=1e-5), p0, args=(x, y),
                                  throw=False).value
    ps.append(Program("levenberg_marquardt_fit", lm, [jnp.array([1.0, 1.0], jnp.float32), xs, ys],
                      "optx.least_squares with LevenbergMarquardt (curve fit)"))

    def gauss_newton(p0, x, y):
        return optx.least_squares(residuals, optx.GaussNewton(rtol=1e-5, atol=1e-5), p0, args=(x, y),
                                  throw=False).value
    ps.append(Program("gauss_newton_fit", gauss_newton, [jnp.array([1.0, 1.0], jnp.float32), xs, ys],
                      "optx.GaussNewton"))

    def dogleg(p0, x, y):
        return optx.least_squares(residuals, optx.Dogleg(rtol=1e-5, atol=1e-5), p0, args=(x, y), throw=False).value
    ps.append(Program("dogleg_fit", dogleg, [jnp.array([1.0, 1.0], jnp.float32), xs, ys], "optx.Dogleg"))

    def fixed_point(y0):
        return optx.fixed_point(lambda y, args: jnp.cos(y), optx.FixedPointIteration(rtol=1e-5, atol=1e-5), y0,
                                max_steps=200).value
    ps.append(Program("fixed_point_cos", fixed_point, [y0], "optx.fixed_point with FixedPointIteration"))

    def implicit_grad(c):
        fn = lambda y, args: y ** 3 + y - args  # noqa: E731
        return optx.root_find(fn, optx.Newton(rtol=1e-5, atol=1e-5), jnp.ones(3), args=c).value.sum()
    ps.append(Program("root_find_implicit_grad", jax.grad(implicit_grad), [jnp.array([1.0, 2.0, 3.0], jnp.float32)],
                      "jax.grad of a root find (ImplicitAdjoint)"))
    ps.append(Program("gradient_descent", lambda y0: optx.minimise(
        rosenbrock, optx.GradientDescent(learning_rate=1e-3, rtol=1e-4, atol=1e-4), y0, max_steps=64, throw=False).value,
        [y0], "optx.GradientDescent"))
    return ps
