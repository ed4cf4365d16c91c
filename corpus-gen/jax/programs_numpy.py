"""lax_numpy_test (and lax_numpy_operators_test, which holds its op tables since the
split): every op record at a spread of its dtypes and at scalar, Python-scalar,
equal, broadcast and empty shapes; the argmin/argmax records; and the array
functions lax_numpy_test's methods exercise (reductions, cumulative ops, indexing,
sorting, linear algebra, FFT) at several dtypes."""
from functools import partial
import numpy as np
import jax.numpy as jnp
from jax._src import test_util as jtu
from common import runnable_dtypes, rng_for, dtname
from gen import Program

SHAPE_CASES = {  # name -> shape of each argument (1 or 2 arguments)
    "pyscalar": [(3, 4), jtu.PYTHON_SCALAR_SHAPE],
    "equal": [(3, 4), (3, 4)],
    "broadcast": [(3, 1), (1, 4)],
    "empty": [(0, 4), (0, 4)],
}
DTYPES_PER_RECORD = 3


def spread(dts, k):
    """k dtypes spread over a table's list (first, last and between)."""
    if len(dts) <= k:
        return dts
    idx = sorted({round(i * (len(dts) - 1) / (k - 1)) for i in range(k)})
    return [dts[i] for i in idx]


def shape_str(s):
    return "py" if s == jtu.PYTHON_SCALAR_SHAPE else "x".join(map(str, s)) or "s"


def table_programs(records, file):
    for rec in records:
        fn = (lambda name: lambda x, *ys: getattr(x, name)(*ys))(rec.name) \
            if rec.name.startswith("__") else getattr(jnp, rec.name)
        if rec.kwargs:
            fn = partial(fn, **rec.kwargs)
        for dt in spread(runnable_dtypes(rec.dtypes), DTYPES_PER_RECORD):
            for case, shapes in SHAPE_CASES.items():
                shapes = shapes[:rec.nargs] if rec.nargs <= 2 else shapes + [shapes[0]] * (rec.nargs - 2)
                if shapes[0] == jtu.PYTHON_SCALAR_SHAPE and rec.name.startswith("__"):
                    continue
                name = f"{rec.test_name}_{dtname(dt)}_{case}"
                rng = rec.rng_factory(rng_for(name))
                try:
                    args = [rng(s, dt) for s in shapes]
                except Exception:
                    continue
                yield Program(name, fn, args, f"{file}:{rec.test_name}")


def f32(*shape):
    return lambda rng: rng.randn(*shape).astype(np.float32)


# (name, function, argument makers, dtypes) for the array functions of lax_numpy_test
def array_functions():
    ax = lambda f, **kw: partial(f, **kw)
    unary = [
        ("sum_axis0", ax(jnp.sum, axis=0)), ("sum_keepdims", ax(jnp.sum, axis=1, keepdims=True)),
        ("mean", jnp.mean), ("var", ax(jnp.var, axis=0)), ("std_ddof", ax(jnp.std, ddof=1)),
        ("prod", ax(jnp.prod, axis=1)), ("max", ax(jnp.max, axis=0)), ("min", jnp.min),
        ("nansum", ax(jnp.nansum, axis=1)), ("nanmean", jnp.nanmean), ("ptp", ax(jnp.ptp, axis=0)),
        ("cumsum", ax(jnp.cumsum, axis=1)), ("cumprod", ax(jnp.cumprod, axis=0)),
        ("cummax", ax(jnp.maximum.accumulate, axis=0)), ("diff", jnp.diff),
        ("sort", ax(jnp.sort, axis=0)), ("argsort", jnp.argsort), ("flip", jnp.flip),
        ("rot90", jnp.rot90), ("transpose", jnp.transpose), ("ravel", jnp.ravel),
        ("reshape", lambda x: jnp.reshape(x, (-1, 2))), ("tile", lambda x: jnp.tile(x, (2, 1))),
        ("repeat", lambda x: jnp.repeat(x, 2, axis=0)), ("roll", lambda x: jnp.roll(x, 1, axis=1)),
        ("pad_reflect", lambda x: jnp.pad(x, 1, mode="reflect")), ("pad_const", lambda x: jnp.pad(x, ((1, 0), (0, 2)))),
        ("tril", jnp.tril), ("triu", ax(jnp.triu, k=1)), ("trace", jnp.trace), ("diagonal", jnp.diagonal),
        ("take", lambda x: jnp.take(x, jnp.array([0, 2]), axis=1)),
        ("index_slice", lambda x: x[1:, ::2]), ("index_int", lambda x: x[2]),
        ("index_array", lambda x: x[jnp.array([0, 1, 1])]), ("index_bool_where", lambda x: jnp.where(x > 0, x, 0)),
        ("at_set", lambda x: x.at[0, 1].set(7)), ("at_add", lambda x: x.at[:, 0].add(1)),
        ("at_mul", lambda x: x.at[1].multiply(2)), ("at_min", lambda x: x.at[jnp.array([0, 0])].min(0)),
        ("clip", lambda x: jnp.clip(x, -1, 1)), ("round", ax(jnp.round, decimals=1)),
        ("argmax_axis", ax(jnp.argmax, axis=1)), ("count_nonzero", jnp.count_nonzero),
        ("any", lambda x: jnp.any(x > 0)), ("all", lambda x: jnp.all(x > -5, axis=0)),
        ("concatenate", lambda x: jnp.concatenate([x, x], axis=0)), ("stack", lambda x: jnp.stack([x, x], -1)),
        ("split", lambda x: jnp.split(x, 2, axis=0)), ("expand_squeeze", lambda x: jnp.squeeze(jnp.expand_dims(x, 0))),
        ("outer", lambda x: jnp.outer(x[0], x[1])), ("kron", lambda x: jnp.kron(x[:2, :2], x[:2, :2])),
        ("matmul", lambda x: x @ x.T), ("einsum", lambda x: jnp.einsum("ij,kj->ik", x, x)),
        ("tensordot", lambda x: jnp.tensordot(x, x, axes=([1], [1]))), ("vdot", lambda x: jnp.vdot(x, x)),
        ("convolve", lambda x: jnp.convolve(x[0], x[1])), ("correlate", lambda x: jnp.correlate(x[0], x[1], "same")),
        ("histogram_counts", lambda x: jnp.histogram(x, bins=3, range=(-2, 2))[0]),
        ("searchsorted", lambda x: jnp.searchsorted(jnp.sort(x[0]), x[1])),
        ("interp", lambda x: jnp.interp(x[1], jnp.sort(x[0]), x[0])),
        ("percentile", lambda x: jnp.percentile(x, 30.0)), ("median", ax(jnp.median, axis=0)),
        ("polyval", lambda x: jnp.polyval(x[0], x[1])), ("cross", lambda x: jnp.cross(x[:, :3], x[:, 1:])),
        ("meshgrid", lambda x: jnp.meshgrid(x[0], x[1])), ("broadcast_to", lambda x: jnp.broadcast_to(x[0], (2, 4))),
        ("logsumexp", lambda x: jax_logsumexp(x)), ("isclose", lambda x: jnp.isclose(x, x[0])),
        ("nan_to_num", jnp.nan_to_num), ("sign", jnp.sign), ("heaviside", lambda x: jnp.heaviside(x, 0.5)),
    ]
    linalg = [
        ("linalg_inv", jnp.linalg.inv), ("linalg_det", jnp.linalg.det), ("linalg_slogdet", jnp.linalg.slogdet),
        ("linalg_solve", lambda a: jnp.linalg.solve(a, a[:, 0])), ("linalg_qr", jnp.linalg.qr),
        ("linalg_svd", jnp.linalg.svd), ("linalg_svdvals", partial(jnp.linalg.svd, compute_uv=False)),
        ("linalg_eigh", lambda a: jnp.linalg.eigh(a + a.T)), ("linalg_eig", jnp.linalg.eigvals),
        ("linalg_cholesky", lambda a: jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(4, dtype=a.dtype))),
        ("linalg_pinv", jnp.linalg.pinv), ("linalg_norm", jnp.linalg.norm), ("linalg_norm_2", partial(jnp.linalg.norm, ord=2)),
        ("linalg_matrix_power", lambda a: jnp.linalg.matrix_power(a, 3)), ("linalg_lstsq", lambda a: jnp.linalg.lstsq(a, a[:, 0])[0]),
        ("linalg_matrix_rank", jnp.linalg.matrix_rank), ("linalg_tensorsolve", lambda a: jnp.linalg.tensorsolve(a, a[0])),
        ("fft_fft", jnp.fft.fft), ("fft_ifft", jnp.fft.ifft), ("fft_rfft", jnp.fft.rfft), ("fft_irfft", jnp.fft.irfft),
        ("fft_fft2", jnp.fft.fft2), ("fft_rfftn", jnp.fft.rfftn), ("fft_fftshift", jnp.fft.fftshift),
    ]
    return unary, linalg


def jax_logsumexp(x):
    import jax.scipy.special as s
    return s.logsumexp(x, axis=1)


def programs(mods):
    ops = mods["lax_numpy_operators_test"]
    yield from table_programs(ops.JAX_ONE_TO_ONE_OP_RECORDS + ops.JAX_COMPOUND_OP_RECORDS
                              + ops.JAX_BITWISE_OP_RECORDS + ops.JAX_OPERATOR_OVERLOADS
                              + ops.JAX_RIGHT_OPERATOR_OVERLOADS, "lax_numpy_operators_test.py")
    npt = mods["lax_numpy_test"]
    yield from table_programs(npt.JAX_ARGMINMAX_RECORDS, "lax_numpy_test.py")
    unary, linalg = array_functions()
    for fname, fn in unary:
        for dt in [np.float32, np.int32, np.float16, np.bool_]:
            name = f"{fname}_{dtname(dt)}"
            rng = rng_for(name)
            x = (rng.randn(4, 6) * 3).astype(dt) if dt != np.bool_ else rng.rand(4, 6) > 0.5
            yield Program(name, fn, [x], f"lax_numpy_test.py:{fname}")
    for fname, fn in linalg:
        for dt in [np.float32, np.complex64]:
            name = f"{fname}_{dtname(dt)}"
            rng = rng_for(name)
            x = rng.randn(4, 4).astype(dt) + (1j * rng.randn(4, 4) if dt == np.complex64 else 0).astype(dt) \
                if dt == np.complex64 else rng.randn(4, 4).astype(dt)
            yield Program(name, fn, [x], f"lax_numpy_test.py:{fname}")
