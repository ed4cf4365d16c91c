"""The multi-device programs of the sharding corpus: every collective, 1-D and
2-D meshes, check_vma (check_rep before 0.6) on and off, shard_map under
jit/grad/vmap/scan, collectives in loops, jit with shardings, sharding
constraints, explicit axes, pmap, named vmap axes, and the structures users
write with them (an FSDP train step, a Megatron tensor-parallel MLP, ring
attention, a pipeline of stages, a mixture-of-experts layer).

Each builder takes the `Api` (what this JAX calls things) and returns
`(fn, args)`, or raises when this JAX cannot express the program (the
generator lists it under `skipped`). Runs under every JAX minor from 0.4.30.
"""
import numpy as np


class Api:
    """The spellings of one JAX version: shard_map and its check flag."""
    def __init__(self):
        import jax
        from jax.sharding import Mesh, PartitionSpec
        self.jax, self.P, self.Mesh = jax, PartitionSpec, Mesh
        if hasattr(jax, "shard_map"):
            self._shard_map, self.check_kw = jax.shard_map, "check_vma"
        else:
            from jax.experimental.shard_map import shard_map
            import inspect
            self._shard_map = shard_map
            params = inspect.signature(shard_map).parameters
            self.check_kw = "check_vma" if "check_vma" in params else "check_rep"

    def mesh(self, shape, names):
        """A mesh of Auto axes (the default of `Mesh` on every version)."""
        return self.Mesh(np.array(self.jax.devices()[:int(np.prod(shape))]).reshape(shape), names)

    def smap(self, f, mesh, in_specs, out_specs, check=True, **kw):
        kw[self.check_kw] = check
        return self._shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def arr(*shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return (rng.standard_normal(shape) * 0.5).astype(dtype)


def ring(n, shift=1):
    return [(i, (i + shift) % n) for i in range(n)]


PROGRAMS = {}


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


def _collectives_1d(check):
    def build(a):
        lax, P = a.jax.lax, a.P
        mesh = a.mesh((8,), ("x",))

        def body(c):
            return (lax.psum(c, "x"), lax.pmax(c, "x"), lax.pmin(c, "x"), lax.pmean(c, "x"),
                    lax.all_gather(c, "x"), lax.all_gather(c, "x", tiled=True),
                    lax.psum_scatter(c, "x", tiled=True), lax.ppermute(c, "x", ring(8)),
                    lax.axis_index("x")[None])
        out = (P(), P(), P(), P(), P("x"), P("x"), P("x"), P("x"), P("x"))
        return a.smap(body, mesh, (P("x"),), out, check), [arr(64, 4)]
    return build


PROGRAMS["collectives_1d"] = _collectives_1d(True)
PROGRAMS["collectives_1d_unchecked"] = _collectives_1d(False)


@program
def psum_scalar_and_ints(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    f = a.smap(lambda c, i: (lax.psum(c.sum(), "x"), lax.psum(i, "x")), mesh, (P("x"), P("x")), (P(), P()))
    return f, [arr(16, 4), np.arange(16, dtype=np.int32)]


@program
def psum_scatter_untiled(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    f = a.smap(lambda c: lax.psum_scatter(c, "x", scatter_dimension=0), mesh, (P(None, "x"),), P("x"))
    return f, [arr(8, 16)]


@program
def all_gather_axis1(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    f = a.smap(lambda c: lax.all_gather(c, "x", axis=1, tiled=True), mesh, (P(None, "x"),), P("x"))
    return f, [arr(4, 16)]


@program
def all_to_all_2d(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((4, 2), ("x", "y"))
    f = a.smap(lambda c: lax.all_to_all(c, "x", 0, 1, tiled=True), mesh, (P("x", "y"),), P(None, ("y", "x")))
    return f, [arr(16, 8)]


@program
def all_to_all_untiled(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((4,), ("x",))
    f = a.smap(lambda c: lax.all_to_all(c, "x", 0, 0), mesh, (P("x"),), P("x"))
    return f, [arr(16, 3)]


def _mesh_2d(check):
    def build(a):
        lax, P = a.jax.lax, a.P
        mesh = a.mesh((4, 2), ("x", "y"))

        def body(c, d):
            s = lax.psum(c, ("x", "y"))
            r = lax.psum(c, "y")
            g = lax.all_gather(d, "y", tiled=True)
            return s, r, g, lax.axis_index(("x", "y"))[None] + lax.axis_index("y")
        return (a.smap(body, mesh, (P("x", "y"), P(("x", "y"))), (P(), P("x"), P(("x", "y")), P(("x", "y"))), check),
                [arr(8, 4), arr(16, 2)])
    return build


PROGRAMS["mesh_2d"] = _mesh_2d(True)
PROGRAMS["mesh_2d_unchecked"] = _mesh_2d(False)


@program
def replicated_input_2d(a):
    lax, P = a.jax.lax, a.P
    mesh = a.mesh((2, 4), ("x", "y"))
    f = a.smap(lambda w, c: lax.psum(c @ w, "y"), mesh, (P(), P("x", "y")), P("x"))
    return f, [arr(4, 3), arr(4, 16)]


@program
def pvary_explicit(a):
    lax, P = a.jax.lax, a.P
    pvary = getattr(lax, "pvary", None) or getattr(lax, "pcast")
    mesh = a.mesh((8,), ("x",))
    if getattr(lax, "pvary", None) is None:
        raise NotImplementedError("no lax.pvary")
    f = a.smap(lambda w, c: (pvary(w, ("x",)) * c, lax.psum(pvary(w, "x"), "x")), mesh, (P(), P("x")), (P("x"), P()))
    return f, [arr(4), arr(16, 4)]


@program
def pcast_to_varying(a):
    lax, P = a.jax.lax, a.P
    if not hasattr(lax, "pcast"):
        raise NotImplementedError("no lax.pcast")
    mesh = a.mesh((8,), ("x",))
    f = a.smap(lambda w, c: lax.pcast(w, "x", to="varying") + c, mesh, (P(), P("x")), P("x"))
    return f, [arr(4), arr(16, 4)]


@program
def shard_map_under_jit(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    inner = a.smap(lambda c: lax.psum(jax.numpy.sin(c), "x"), mesh, (P("x"),), P())
    return jax.jit(lambda x: inner(x * 2.0) + 1.0), [arr(16, 4)]


def _grad(check):
    def build(a):
        jax, lax, P = a.jax, a.jax.lax, a.P
        mesh = a.mesh((8,), ("x",))
        loss = a.smap(lambda w, x: lax.psum(((x @ w) ** 2).sum(), "x"), mesh, (P(), P("x")), P(), check)
        return jax.grad(loss), [arr(4, 3), arr(16, 4)]
    return build


PROGRAMS["shard_map_grad"] = _grad(True)
PROGRAMS["shard_map_grad_unchecked"] = _grad(False)


@program
def shard_map_under_vmap(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    inner = a.smap(lambda c: lax.psum(c, "x"), mesh, (P("x"),), P())
    return jax.vmap(inner), [arr(3, 16, 2)]


@program
def shard_map_in_scan(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))
    step = a.smap(lambda h, c: h + lax.pmean(c, "x"), mesh, (P(), P("x")), P())

    def f(h0, xs):
        return lax.scan(lambda h, x: (step(h, x), h.sum()), h0, xs)
    return f, [arr(2, 4), arr(3, 16, 4)]


@program
def scan_inside_shard_map(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))

    def body(xs):
        def step(h, x):
            return h + lax.psum(x, "x"), lax.pmax(x, "x")
        return lax.scan(step, jax.numpy.zeros(xs.shape[1:], xs.dtype), xs)
    return a.smap(body, mesh, (P(None, "x"),), (P(), P())), [arr(5, 16)]


@program
def collectives_in_fori_loop(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))

    def body(c):
        def it(i, acc):
            return lax.ppermute(acc, "x", ring(8)) + c
        return lax.fori_loop(0, 8, it, c)
    return a.smap(body, mesh, (P("x"),), P("x")), [arr(16, 4)]


@program
def collectives_in_while_loop(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))

    def body(c):
        def cond(s):
            return lax.psum(s[0], "x") < 40
        def step(s):
            return s[0] + 1, s[1] * 0.5
        return lax.while_loop(cond, step, (lax.axis_index("x"), c))[1]
    return a.smap(body, mesh, (P("x"),), P("x")), [arr(16, 4)]


@program
def collective_in_cond(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("x",))

    def body(c):
        return lax.cond(lax.psum(c.sum(), "x") > 0, lambda v: lax.psum(v, "x"), lambda v: lax.pmax(v, "x"), c)
    return a.smap(body, mesh, (P("x"),), P()), [arr(16, 4)]


@program
def jit_in_out_shardings(a):
    jax = a.jax
    from jax.sharding import NamedSharding
    mesh = a.mesh((4, 2), ("x", "y"))
    s_in = NamedSharding(mesh, a.P("x", "y"))
    s_out = NamedSharding(mesh, a.P("x"))
    f = jax.jit(lambda x, w: jax.numpy.tanh(x @ w), in_shardings=(s_in, NamedSharding(mesh, a.P("y"))),
                out_shardings=s_out)
    return f, [arr(8, 4), arr(4, 6)]


@program
def with_sharding_constraint(a):
    jax = a.jax
    from jax.sharding import NamedSharding
    mesh = a.mesh((8,), ("x",))

    def f(x):
        y = jax.lax.with_sharding_constraint(x * 2.0, NamedSharding(mesh, a.P("x")))
        return jax.lax.with_sharding_constraint(y.sum(0), NamedSharding(mesh, a.P()))
    return jax.jit(f), [arr(16, 4)]


@program
def explicit_axes_reshard(a):
    jax = a.jax
    from jax.sharding import AxisType, NamedSharding
    if not hasattr(jax.sharding, "reshard") and not hasattr(jax, "reshard"):
        raise NotImplementedError("no reshard")
    reshard = getattr(jax, "reshard", None) or jax.sharding.reshard
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
    x = jax.device_put(arr(8, 4), NamedSharding(mesh, a.P("x", "y")))
    w = jax.device_put(arr(4, 6), NamedSharding(mesh, a.P("y")))

    def f(x, w):
        y = reshard(x, NamedSharding(mesh, a.P("x")))
        return jax.numpy.sin(y).sum(0), y * 2.0, x.sum(1) + w.sum()
    return jax.jit(f), [x, w]


@program
def explicit_axes_shard_map(a):
    jax, lax = a.jax, a.jax.lax
    from jax.sharding import AxisType, NamedSharding
    if not hasattr(jax, "shard_map"):
        raise NotImplementedError("no jax.shard_map")
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(arr(16, 4), NamedSharding(mesh, a.P("x")))
    f = jax.jit(jax.shard_map(lambda c: lax.psum(c, "x"), mesh=mesh, in_specs=a.P("x"), out_specs=a.P()))
    return f, [x]


@program
def partial_manual_axes(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((4, 2), ("x", "y"))
    if hasattr(jax, "shard_map"):
        f = jax.shard_map(lambda c: lax.psum(c, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(), axis_names={"x"})
    else:
        raise NotImplementedError("auto= of experimental shard_map needs jit-only partial manual")
    return jax.jit(f), [arr(8, 4)]


def _partial_manual(a, body, shape, names, in_specs, out_specs, manual, args):
    """`shard_map` manual over `manual`, the other mesh axes auto."""
    jax = a.jax
    if not hasattr(jax, "shard_map"):
        raise NotImplementedError("auto= of experimental shard_map needs jit-only partial manual")
    f = jax.shard_map(body, mesh=a.mesh(shape, names), in_specs=in_specs, out_specs=out_specs,
                      axis_names=manual)
    return jax.jit(f), args


@program
def partial_manual_second_axis(a):
    # Manual over the second mesh axis: the subgroup's devices are transposed.
    jax, lax, P = a.jax, a.jax.lax, a.P

    def body(c):
        return lax.pmax(c * 2.0, "y") + lax.axis_index("y").astype(np.float32)
    return _partial_manual(a, body, (2, 4), ("x", "y"), (P(None, "y"),), P(None, "y"), {"y"}, [arr(6, 8)])


@program
def partial_manual_collectives_loop(a):
    jax, lax, P, jnp = a.jax, a.jax.lax, a.P, a.jax.numpy

    def body(c, w):
        g = lax.all_gather(c, "y", tiled=True)
        r = lax.ppermute(c, "y", ring(4))
        z = lax.fori_loop(0, 3, lambda k, acc: acc + jnp.tanh(acc @ w) * 0.1, r)
        return g.sum(0, keepdims=True) + z.sum(), lax.psum(z, "y")
    return _partial_manual(a, body, (2, 4), ("x", "y"), (P("y"), P()), (P("y"), P()), {"y"},
                           [arr(8, 3), arr(3, 3, seed=1)])


@program
def partial_manual_two_of_three(a):
    jax, lax, P, jnp = a.jax, a.jax.lax, a.P, a.jax.numpy

    def body(c):
        return lax.psum(jnp.sin(c), ("a", "c")) * 1.5
    return _partial_manual(a, body, (2, 2, 2), ("a", "b", "c"), (P("a", "c"),), P("a", "c"), {"a", "c"},
                           [arr(4, 6)])


@program
def pmap_psum(a):
    jax = a.jax
    return jax.pmap(lambda x: (jax.lax.psum(x, "i"), jax.lax.axis_index("i"), jax.lax.pmax(x, "i")), axis_name="i"), \
        [arr(8, 3)]


@program
def pmap_collectives(a):
    jax, lax = a.jax, a.jax.lax

    def f(x):
        return (lax.all_gather(x, "i"), lax.ppermute(x, "i", ring(8)), lax.pmean(x, "i"),
                lax.psum_scatter(x, "i", tiled=True), lax.all_to_all(x, "i", 0, 0, tiled=True))
    return jax.pmap(f, axis_name="i"), [arr(8, 8)]


@program
def pmap_in_axes(a):
    jax = a.jax
    return jax.pmap(lambda w, x: jax.lax.psum(x @ w, "d"), axis_name="d", in_axes=(None, 0)), [arr(3, 2), arr(8, 4, 3)]


@program
def pmap_axes(a):
    # Mapped at another axis than the first, and an unmapped operand.
    jax, jnp = a.jax, a.jax.numpy

    def f(x, w):
        y = jnp.tanh(x) * w[0]
        return jax.lax.psum(y, "k") - y, jnp.sum(w)
    return jax.pmap(f, axis_name="k", in_axes=(1, None), out_axes=(1, 0)), [arr(3, 8, 2), arr(2)]


@program
def vmap_named_axis(a):
    jax, lax = a.jax, a.jax.lax

    def f(x):
        return x - lax.pmean(x, "b"), lax.all_gather(x, "b"), lax.axis_index("b"), lax.pmax(x, "b")
    return jax.vmap(f, axis_name="b"), [arr(5, 3)]


@program
def vmap_named_axis_ppermute(a):
    jax, lax = a.jax, a.jax.lax
    return jax.vmap(lambda x: lax.ppermute(x, "b", ring(4)) + lax.psum(x, "b"), axis_name="b"), [arr(4, 2)]


@program
def fsdp_train_step(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    jnp = jax.numpy
    mesh = a.mesh((8,), ("data",))

    def step(w1, w2, x, y):
        def loss(w1, w2):
            W1 = lax.all_gather(w1, "data", tiled=True)
            W2 = lax.all_gather(w2, "data", tiled=True)
            h = jax.nn.relu(x @ W1)
            return jnp.mean((h @ W2 - y) ** 2)
        l, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)
        return w1 - 0.1 * g1, w2 - 0.1 * g2, lax.pmean(l, "data")
    spec = P("data")
    f = a.smap(step, mesh, (spec, spec, spec, spec), (spec, spec, P()))
    return jax.jit(f), [arr(16, 8), arr(8, 2), arr(16, 16), arr(16, 2)]


@program
def megatron_mlp(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((2, 4), ("data", "model"))

    def mlp(x, w1, b1, w2):
        h = jax.nn.gelu(x @ w1 + b1)
        return lax.psum(h @ w2, "model")
    f = a.smap(mlp, mesh, (P("data"), P(None, "model"), P("model"), P("model")), P("data"))
    return jax.jit(f), [arr(8, 6), arr(6, 16), arr(16), arr(16, 6)]


@program
def ring_attention(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    jnp = jax.numpy
    n = 4
    mesh = a.mesh((n,), ("sp",))

    def attn(q, k, v):
        def step(i, carry):
            acc, m, l, k, v = carry
            s = q @ k.T
            m_new = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - m_new[:, None])
            corr = jnp.exp(m - m_new)
            acc = acc * corr[:, None] + p @ v
            l = l * corr + p.sum(-1)
            k = lax.ppermute(k, "sp", ring(n))
            v = lax.ppermute(v, "sp", ring(n))
            return acc, m_new, l, k, v
        init = (q * 0.0, q[:, 0] * 0.0 - jnp.inf, q[:, 0] * 0.0, k, v)
        acc, m, l, _, _ = lax.fori_loop(0, n, step, init)
        return acc / l[:, None]
    f = a.smap(attn, mesh, (P("sp"), P("sp"), P("sp")), P("sp"))
    return jax.jit(f), [arr(16, 4, seed=1), arr(16, 4, seed=2), arr(16, 4, seed=3)]


@program
def pipeline_stages(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    jnp = jax.numpy
    n = 4
    mesh = a.mesh((n,), ("stage",))

    def pipe(w, xs):
        w = w[0]
        stage = lax.axis_index("stage")

        def tick(t, carry):
            state, out = carry
            inp = jnp.where(stage == 0, xs[0, t % xs.shape[1]], state)
            state = jnp.tanh(inp @ w)
            out = jnp.where((stage == n - 1) & (t >= n - 1), out.at[(t - n + 1) % xs.shape[1]].set(state), out)
            return lax.ppermute(state, "stage", [(i, i + 1) for i in range(n - 1)]), out
        state = jnp.zeros(xs.shape[2:], xs.dtype)
        _, out = lax.fori_loop(0, xs.shape[1] + n - 1, tick, (state, jnp.zeros(xs.shape[1:], xs.dtype)))
        return lax.psum(out, "stage")[None]
    f = a.smap(pipe, mesh, (P("stage"), P()), P("stage"), check=False)
    return jax.jit(f), [arr(n, 3, 3), arr(1, 4, 2, 3)]


@program
def moe_layer(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    jnp = jax.numpy
    e = 4
    mesh = a.mesh((e,), ("expert",))

    def moe(x, gate, w):
        # x: [tokens, d] per shard; w: [1, d, d] this shard's expert.
        logits = x @ gate
        choice = jnp.argmax(logits, -1)
        dispatch = jax.nn.one_hot(choice, e, dtype=x.dtype)          # [t, e]
        buckets = jnp.einsum("te,td->etd", dispatch, x)             # [e, t, d]
        recv = lax.all_to_all(buckets, "expert", 0, 0, tiled=True)    # [e, t, d] from every shard
        y = jnp.einsum("etd,df->etf", recv, w[0])
        back = lax.all_to_all(y, "expert", 0, 0, tiled=True)
        return jnp.einsum("te,etd->td", dispatch, back)
    f = a.smap(moe, mesh, (P("expert"), P(), P("expert")), P("expert"))
    return jax.jit(f), [arr(16, 4), arr(4, e), arr(e, 4, 4)]


@program
def data_parallel_grad(a):
    jax, lax, P = a.jax, a.jax.lax, a.P
    mesh = a.mesh((8,), ("batch",))

    def step(w, x, y):
        g = jax.grad(lambda w: ((x @ w - y) ** 2).mean())(w)
        return w - 0.01 * lax.pmean(g, "batch")
    return jax.jit(a.smap(step, mesh, (P(), P("batch"), P("batch")), P())), [arr(4, 2), arr(16, 4), arr(16, 2)]
