"""The Pallas kernels and mutable-ref programs of corpus-gen/pallas.

`programs()` returns, for the JAX that imports this file, a list of
`Program(name, make, args_of)`: `make()` builds the function (it may raise
when this JAX lacks an API: the program is then skipped, with the reason),
`args_of()` its example arguments. Every `pallas_call` runs with
`interpret=True`, so that the values are computed on CPU.
"""
import collections
import functools

import numpy as np

Program = collections.namedtuple("Program", "name make args_of")


def _rng(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pl():
    from jax.experimental import pallas as pl
    return pl


def _call(kernel, out_shape, **kw):
    return _pl().pallas_call(kernel, out_shape=out_shape, interpret=True, **kw)


def _spec(block_shape, index_map):
    """A BlockSpec, by keyword: JAX 0.4.30 takes `(index_map, block_shape)` positionally."""
    return _pl().BlockSpec(block_shape=block_shape, index_map=index_map)


def _refs():
    """`(new_ref, freeze)`: `jax.new_ref`/`jax.freeze`, or before them `core.mutable_array`/`core.freeze`."""
    import jax
    from jax._src import core
    new = getattr(jax, "new_ref", None) or core.mutable_array
    freeze = getattr(jax, "freeze", None) or getattr(core, "freeze", None) or (lambda r: r[...])
    return new, freeze


def _sds(shape, dtype=np.float32):
    import jax
    return jax.ShapeDtypeStruct(shape, dtype)


# ---- Pallas kernels ---------------------------------------------------------

def add():
    """The quickstart: one block, the whole arrays."""
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def f(x, y):
        return _call(kernel, _sds(x.shape, x.dtype))(x, y)
    return f


def add_grid():
    """The quickstart over a grid of 4 blocks of 2 rows, program_id picking nothing."""
    pl = _pl()

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def f(x, y):
        spec = _spec((2, 16), lambda i: (i, 0))
        return _call(kernel, _sds(x.shape, x.dtype), grid=(4,), in_specs=[spec, spec],
                     out_specs=spec)(x, y)
    return f


def matmul_blocked():
    """Blocked matmul over a 2x2 grid with BlockSpecs."""
    pl = _pl()

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] @ y_ref[...]

    def f(x, y):
        return _call(kernel, _sds((x.shape[0], y.shape[1]), x.dtype), grid=(2, 2),
                     in_specs=[_spec((4, 8), lambda i, j: (i, 0)),
                               _spec((8, 4), lambda i, j: (0, j))],
                     out_specs=_spec((4, 4), lambda i, j: (i, j)))(x, y)
    return f


def ragged_blocks():
    """Blocks that do not divide the array: 10 rows in blocks of 4 (a grid of 3), the
    last block past the end (the interpreter pads with uninitialised values and
    slices the result back)."""
    pl = _pl()

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + 1.0

    def f(x):
        spec = _spec((4, 16), lambda i: (i, 0))
        return _call(kernel, _sds(x.shape, x.dtype), grid=(3,), in_specs=[spec],
                     out_specs=spec)(x)
    return f


def ragged_sum():
    """A row sum over column blocks that do not divide the array (20 columns in
    blocks of 8), the last block's padding read as uninitialised values."""
    pl = _pl()

    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = x_ref[...][:, :1] * 0.0
        o_ref[...] += x_ref[...][:, :1]

    def f(x):
        return _call(kernel, _sds((x.shape[0], 1), x.dtype), grid=(3,),
                     in_specs=[_spec((4, 8), lambda j: (0, j))],
                     out_specs=_spec((4, 1), lambda j: (0, 0)))(x)
    return f


def gather_out_of_bounds():
    """A load at an array of indices partly past the end (read clamped), and a
    store at an array of indices partly past the end (those dropped)."""
    pl = _pl()

    def kernel(x_ref, o_ref, p_ref):
        import jax.numpy as jnp
        idx = jnp.arange(8, dtype=jnp.int32) * 3
        o_ref[...] = x_ref[idx]
        p_ref[...] = x_ref[...] * 0.0
        p_ref[idx] = x_ref[idx] + 1.0

    def f(x):
        return _call(kernel, (_sds((8,), x.dtype), _sds(x.shape, x.dtype)))(x)
    return f


def matmul_k_accumulate():
    """Blocked matmul with a k axis: `pl.when` zeroes the accumulator at k == 0."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...] @ y_ref[...]

    def f(x, y):
        return _call(kernel, _sds((8, 8), x.dtype), grid=(2, 2, 2),
                     in_specs=[_spec((4, 4), lambda i, j, k: (i, k)),
                               _spec((4, 4), lambda i, j, k: (k, j))],
                     out_specs=_spec((4, 4), lambda i, j, k: (i, j)))(x, y)
    return f


def softmax():
    """Row softmax, one row block per program."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

    def f(x):
        spec = _spec((2, x.shape[1]), lambda i: (i, 0))
        return _call(kernel, _sds(x.shape, x.dtype), grid=(x.shape[0] // 2,), in_specs=[spec],
                     out_specs=spec)(x)
    return f


def layer_norm():
    """Layer norm with weight and bias, one row block per program."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, w_ref, b_ref, o_ref):
        x = x_ref[...]
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
        o_ref[...] = (x - mean) * jax.lax.rsqrt(var + 1e-5) * w_ref[...] + b_ref[...]

    import jax

    def f(x, w, b):
        row = _spec((2, x.shape[1]), lambda i: (i, 0))
        vec = _spec((1, x.shape[1]), lambda i: (0, 0))
        return _call(kernel, _sds(x.shape, x.dtype), grid=(x.shape[0] // 2,),
                     in_specs=[row, vec, vec], out_specs=row)(x, w, b)
    return f


def rms_norm():
    """RMS norm, one row block per program."""
    pl = _pl()
    import jax
    import jax.numpy as jnp

    def kernel(x_ref, w_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = x * jax.lax.rsqrt(jnp.mean(x * x, axis=1, keepdims=True) + 1e-6) * w_ref[...]

    def f(x, w):
        row = _spec((2, x.shape[1]), lambda i: (i, 0))
        return _call(kernel, _sds(x.shape, x.dtype), grid=(x.shape[0] // 2,),
                     in_specs=[row, _spec((1, x.shape[1]), lambda i: (0, 0))],
                     out_specs=row)(x, w)
    return f


def sum_reduce_when():
    """A column sum accumulated over the grid: `pl.when` initialises the output block."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += jnp.sum(x_ref[...], axis=0, keepdims=True)

    def f(x):
        return _call(kernel, _sds((1, x.shape[1]), x.dtype), grid=(x.shape[0] // 2,),
                     in_specs=[_spec((2, x.shape[1]), lambda i: (i, 0))],
                     out_specs=_spec((1, x.shape[1]), lambda i: (0, 0)))(x)
    return f


def max_reduce_last():
    """A row max over column blocks, finished by `pl.when` at the last program (num_programs)."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, o_ref):
        j = pl.program_id(1)

        @pl.when(j == 0)
        def _():
            o_ref[...] = jnp.full(o_ref.shape, -jnp.inf, o_ref.dtype)
        o_ref[...] = jnp.maximum(o_ref[...], jnp.max(x_ref[...], axis=1, keepdims=True))

        @pl.when(j == pl.num_programs(1) - 1)
        def _():
            o_ref[...] = o_ref[...] * 2.0
    def f(x):
        return _call(kernel, _sds((x.shape[0], 1), x.dtype), grid=(2, 2),
                     in_specs=[_spec((4, 4), lambda i, j: (i, j))],
                     out_specs=_spec((4, 1), lambda i, j: (i, 0)))(x)
    return f


def _tpu():
    from jax.experimental.pallas import tpu as pltpu
    return pltpu


def scratch():
    """A scratch buffer (`scratch_shapes`, `pltpu.VMEM`) used as an accumulator."""
    import jax.numpy as jnp

    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] = jnp.zeros_like(acc_ref)
        for k in range(2):
            acc_ref[...] += x_ref[k]
        o_ref[...] = acc_ref[...] + 1.0

    def f(x):
        return _call(kernel, _sds(x.shape[1:], x.dtype), scratch_shapes=[_tpu().VMEM(x.shape[1:], jnp.float32)])(x)
    return f


def aliased():
    """input_output_aliases: the output is the input buffer, incremented."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    def f(x):
        return _call(kernel, _sds(x.shape, x.dtype), input_output_aliases={0: 0})(x)
    return f


def ds_window():
    """pl.ds windows at a program's offset, and an indexed `+=` of a row."""
    pl = _pl()

    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(i * 2, 2), :] = x_ref[pl.ds(i * 2, 2), :] * 3.0
        o_ref[i * 2, :] += x_ref[i, :]

    def f(x):
        return _call(kernel, _sds(x.shape), grid=(4,))(x)
    return f


def ds_strided():
    """A strided load, `pl.ds(0, 4, stride=2)`."""
    pl = _pl()

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(0, 4, stride=2), :]

    def f(x):
        return _call(kernel, _sds((4, x.shape[1])))(x)
    return f


def masked_load():
    """A masked load and store (`pl.load`/`pl.store` with `mask=`, `other=`)."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, o_ref):
        m = jnp.arange(8)[None, :] < 5
        v = pl.load(x_ref, (slice(None), slice(None)), mask=m, other=0.0)
        pl.store(o_ref, (slice(None), slice(None)), v * 2.0, mask=m)

    def f(x):
        return _call(kernel, _sds(x.shape))(x)
    return f


def multiple_outputs():
    """Two outputs of different shapes, two in specs."""
    pl = _pl()
    import jax.numpy as jnp

    def kernel(x_ref, y_ref, s_ref, m_ref):
        s_ref[...] = x_ref[...] + y_ref[...]
        m_ref[...] = jnp.max(x_ref[...] * y_ref[...], axis=1, keepdims=True)

    def f(x, y):
        spec = _spec((2, x.shape[1]), lambda i: (i, 0))
        return _call(kernel, (_sds(x.shape), _sds((x.shape[0], 1))), grid=(x.shape[0] // 2,),
                     in_specs=[spec, spec],
                     out_specs=(spec, _spec((2, 1), lambda i: (i, 0))))(x, y)
    return f


def under_jit():
    import jax
    return jax.jit(add())


def under_vmap():
    import jax
    return jax.vmap(add())


def under_grad():
    """grad through a kernel with a custom_vjp whose backward is another kernel."""
    import jax

    @jax.custom_vjp
    def square(x):
        return _call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * x_ref[...]), _sds(x.shape))(x)

    def fwd(x):
        return square(x), x

    def bwd(x, g):
        return (_call(lambda x_ref, g_ref, o_ref: o_ref.__setitem__(..., 2.0 * x_ref[...] * g_ref[...]),
                      _sds(x.shape))(x, g),)
    square.defvjp(fwd, bwd)
    return jax.grad(lambda x: square(x).sum())


def flash_attention_reference():
    """The flash-attention kernel of jax/experimental/pallas/ops/gpu/attention.py, interpreted."""
    from jax.experimental.pallas.ops.gpu import attention
    return functools.partial(attention.mha, segment_ids=None, block_sizes=attention.BlockSizes(
        block_q=8, block_k=8, block_q_dkv=8, block_kv_dkv=8, block_q_dq=8, block_kv_dq=8)
        if hasattr(attention, "BlockSizes") else None, interpret=True) \
        if hasattr(attention, "BlockSizes") else functools.partial(
            attention.mha, segment_ids=None, block_q=8, block_k=8, interpret=True)


def softmax_ops():
    """jax/experimental/pallas/ops/gpu/softmax.py, interpreted."""
    from jax.experimental.pallas.ops.gpu import softmax as sm
    return functools.partial(sm.softmax, axis=-1, interpret=True)


def layer_norm_ops():
    """jax/experimental/pallas/ops/gpu/layer_norm.py's forward, interpreted."""
    from jax.experimental.pallas.ops.gpu import layer_norm as ln
    return functools.partial(ln.layer_norm, interpret=True)


# ---- mutable refs -----------------------------------------------------------

def new_ref_update():
    """jax.new_ref, an indexed `+=`, a whole store and freeze."""
    new_ref, freeze = _refs()

    def f(x):
        r = new_ref(x)
        r[0, :] += 1.0
        r[2] = r[1] * 2.0
        return freeze(r)
    return f


def ref_fori_loop():
    """A ref updated in a fori_loop (the ref goes into scan)."""
    import jax
    new_ref, freeze = _refs()

    def f(x):
        r = new_ref(x)

        def body(i, c):
            r[i, :] = r[i, :] * 2.0 + c
            return c + 1.0
        jax.lax.fori_loop(0, x.shape[0], body, 0.0)
        return freeze(r)
    return f


def ref_scan():
    """A ref accumulated in a scan."""
    import jax
    import jax.numpy as jnp

    new_ref, freeze = _refs()

    def f(xs):
        acc = new_ref(jnp.zeros(xs.shape[1:], xs.dtype))

        def body(c, x):
            acc[...] += x
            return c, acc[...]
        _, ys = jax.lax.scan(body, 0.0, xs)
        return freeze(acc), ys
    return f


def ref_cond():
    """A ref written in one branch of a cond."""
    import jax

    new_ref, freeze = _refs()

    def f(x, p):
        r = new_ref(x)

        def yes():
            r[...] = r[...] + 1.0

        def no():
            r[0] = r[0] * 0.0
        jax.lax.cond(p, yes, no)
        return freeze(r)
    return f


def run_state():
    """jax._src.state.discharge.run_state: a function of refs run on values."""
    from jax._src.state.discharge import run_state as rs

    def body(refs):
        x_ref, y_ref = refs
        y_ref[...] = x_ref[...] * 2.0
        x_ref[0] += 1.0

    def f(x):
        return rs(body)((x, x))
    return f


def for_loop():
    """The older `for` primitive (jax._src.lax.control_flow.for_loop)."""
    from jax._src.lax.control_flow.for_loop import for_loop as fl

    def f(x):
        def body(i, refs):
            x_ref, o_ref = refs
            o_ref[i] = x_ref[i] * 2.0
        return fl(x.shape[0], body, (x, x))[1]
    return f


def programs():
    x8 = lambda: (_rng(8, 16), _rng(8, 16, seed=1))
    return [
        Program("add", add, x8),
        Program("add_grid", add_grid, x8),
        Program("matmul_blocked", matmul_blocked, lambda: (_rng(8, 8), _rng(8, 8, seed=1))),
        Program("ragged_blocks", ragged_blocks, lambda: (_rng(10, 16),)),
        Program("ragged_sum", ragged_sum, lambda: (_rng(4, 20),)),
        Program("gather_out_of_bounds", gather_out_of_bounds, lambda: (_rng(16),)),
        Program("matmul_k_accumulate", matmul_k_accumulate, lambda: (_rng(8, 8), _rng(8, 8, seed=1))),
        Program("softmax", softmax, lambda: (_rng(8, 16),)),
        Program("layer_norm", layer_norm, lambda: (_rng(8, 16), _rng(1, 16, seed=1), _rng(1, 16, seed=2))),
        Program("rms_norm", rms_norm, lambda: (_rng(8, 16), _rng(1, 16, seed=1))),
        Program("sum_reduce_when", sum_reduce_when, lambda: (_rng(8, 16),)),
        Program("max_reduce_last", max_reduce_last, lambda: (_rng(8, 8),)),
        Program("scratch", scratch, lambda: (_rng(2, 4, 8),)),
        Program("aliased", aliased, lambda: (_rng(4, 8),)),
        Program("ds_window", ds_window, lambda: (_rng(8, 8),)),
        Program("ds_strided", ds_strided, lambda: (_rng(8, 8),)),
        Program("masked_load", masked_load, lambda: (_rng(4, 8),)),
        Program("multiple_outputs", multiple_outputs, x8),
        Program("under_jit", under_jit, x8),
        Program("under_vmap", under_vmap, lambda: (_rng(3, 8, 16), _rng(3, 8, 16, seed=1))),
        Program("under_grad", under_grad, lambda: (_rng(4, 8),)),
        Program("flash_attention_reference", flash_attention_reference,
                lambda: tuple(_rng(1, 16, 2, 16, seed=s) for s in range(3))),
        Program("softmax_ops", softmax_ops, lambda: (_rng(4, 16),)),
        Program("layer_norm_ops", layer_norm_ops, lambda: (_rng(2, 4, 16), _rng(16, seed=1), _rng(16, seed=2))),
        Program("new_ref_update", new_ref_update, lambda: (_rng(3, 4),)),
        Program("ref_fori_loop", ref_fori_loop, lambda: (_rng(3, 4),)),
        Program("ref_scan", ref_scan, lambda: (_rng(5, 4),)),
        Program("ref_cond", ref_cond, lambda: (_rng(3, 4), np.bool_(True))),
        Program("run_state", run_state, lambda: (_rng(3, 4),)),
        Program("for_loop", for_loop, lambda: (_rng(3, 4),)),
    ]
