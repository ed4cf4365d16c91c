"""diffrax, as its docs write it: `diffeqsolve(ODETerm(f), solver, t0, t1, dt0, y0,
...)` with `SaveAt`, `PIDController`, adjoints, SDEs."""
import jax
import jax.numpy as jnp
import diffrax

from common import Program, f32

DISTRIBUTIONS = ["diffrax", "equinox", "lineax", "optimistix"]


def decay(t, y, args):
    return -args * y


def lotka_volterra(t, y, args):
    a, b, c, d = args
    x, z = y
    return jnp.stack([a * x - b * x * z, -c * z + d * x * z])


def robertson(t, y, args):
    k1, k2, k3 = 0.04, 3e7, 1e4
    y1, y2, y3 = y
    return jnp.stack([-k1 * y1 + k3 * y2 * y3, k1 * y1 - k2 * y2 ** 2 - k3 * y2 * y3, k2 * y2 ** 2])


def programs():
    ps = []
    y0 = jnp.abs(f32(1, 3)) + 0.5

    def quickstart(y0, k):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Dopri5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=k,
                                  saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 1.0, 4)))
        return sol.ys
    ps.append(Program("dopri5_decay_saveat", quickstart, [y0, jnp.float32(0.7)], "the quickstart: Dopri5, SaveAt(ts)"))

    def tsit5_adaptive(y0, args):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(lotka_volterra), diffrax.Tsit5(), 0.0, 5.0, 0.1, y0, args=args,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
                                  saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 5.0, 6)))
        return sol.ys
    ps.append(Program("tsit5_lotka_volterra_pid", tsit5_adaptive,
                      [jnp.array([10.0, 10.0], jnp.float32), jnp.array([0.1, 0.02, 0.4, 0.02], jnp.float32)],
                      "the Lotka-Volterra example: Tsit5 with PIDController"))

    def stiff(y0):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(robertson), diffrax.Kvaerno5(), 0.0, 1.0, 1e-4, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-3, atol=1e-6), max_steps=256)
        return sol.ys
    ps.append(Program("kvaerno5_robertson", stiff, [jnp.array([1.0, 0.0, 0.0], jnp.float32)],
                      "the stiff ODE example: Kvaerno5 (implicit, Newton through optimistix/lineax)"))

    def euler(y0, k):
        return diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Euler(), 0.0, 1.0, 0.25, y0, args=k).ys
    ps.append(Program("euler_fixed_step", euler, [y0, jnp.float32(0.3)], "Euler with a constant step"))

    def loss(k, y0, adjoint):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0, args=k, adjoint=adjoint)
        return jnp.sum(sol.ys ** 2)
    ps.append(Program("tsit5_grad_recursive_checkpoint",
                      jax.grad(lambda k, y0: loss(k, y0, diffrax.RecursiveCheckpointAdjoint())),
                      [jnp.float32(0.5), y0], "jax.grad through diffeqsolve (RecursiveCheckpointAdjoint)"))
    ps.append(Program("tsit5_grad_backsolve", jax.grad(lambda k, y0: loss(k, y0, diffrax.BacksolveAdjoint())),
                      [jnp.float32(0.5), y0], "jax.grad with BacksolveAdjoint (the continuous adjoint)"))

    def neural_ode(w1, w2, y0):
        f = lambda t, y, args: w2 @ jnp.tanh(w1 @ y)  # noqa: E731
        sol = diffrax.diffeqsolve(diffrax.ODETerm(f), diffrax.Heun(), 0.0, 1.0, 0.2, y0)
        return sol.ys[-1]
    w1, w2 = 0.3 * f32(2, 6, 2), 0.3 * f32(3, 2, 6)
    ps.append(Program("neural_ode_heun", neural_ode, [w1, w2, f32(4, 2)], "the neural ODE example's vector field, Heun"))
    ps.append(Program("neural_ode_grad", jax.grad(lambda w1, w2, y0: jnp.sum(neural_ode(w1, w2, y0) ** 2), argnums=(0, 1)),
                      [w1, w2, f32(4, 2)], "the neural ODE's loss gradient"))

    def sde(y0, key):
        bm = diffrax.VirtualBrownianTree(0.0, 1.0, tol=1e-2, shape=(), key=key)
        terms = diffrax.MultiTerm(diffrax.ODETerm(lambda t, y, a: -y),
                                  diffrax.ControlTerm(lambda t, y, a: 0.1 * t, bm))
        return diffrax.diffeqsolve(terms, diffrax.Euler(), 0.0, 1.0, 0.25, y0).ys
    ps.append(Program("sde_euler_brownian", sde, [jnp.float32(1.0), jax.random.PRNGKey(0)],
                      "the SDE example: MultiTerm(ODETerm, ControlTerm) with VirtualBrownianTree"))

    def dense(y0):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 1.0, 0.2, y0, args=1.0,
                                  saveat=diffrax.SaveAt(dense=True))
        return sol.evaluate(0.35), sol.derivative(0.6)
    ps.append(Program("dense_output_evaluate", dense, [y0], "SaveAt(dense=True), sol.evaluate and sol.derivative"))

    def event(y0):
        cond = lambda t, y, args, **kw: y[0] - 0.5  # noqa: E731
        sol = diffrax.diffeqsolve(diffrax.ODETerm(decay), diffrax.Tsit5(), 0.0, 5.0, 0.1, y0, args=1.0,
                                  event=diffrax.Event(cond))
        return sol.ts, sol.ys
    ps.append(Program("event_termination", event, [jnp.array([1.0, 2.0], jnp.float32)],
                      "diffrax.Event: stop when y[0] crosses 0.5 (root found with optimistix)"))
    ps.append(Program("euler_poly", euler, [f32(5, 4), jnp.float32(0.3)], "Euler on a state of symbolic size",
                      poly=["n", ""]))
    return ps
