"""Plain jax.numpy and jax.scipy as users write beside the libraries: linear
algebra whose results JAX drops (`_` outputs), polynomials, FFTs, a jitted
helper, shape-polymorphic exports, NumPy's raw QR (`geqrf`) and its Q applied
(`ormqr`), and a batch statistic with `vmap`'s named axis (`psum` over a
positional axis)."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax

from common import Program, f32

DISTRIBUTIONS = []


def programs():
    ps = []
    a = f32(1, 6, 4)
    s = a.T @ a + jnp.eye(4, dtype=jnp.float32)
    ps.append(Program("svd_singular_values", lambda a: jnp.linalg.svd(a, compute_uv=False), [a], "jnp.linalg.svd(compute_uv=False)"))
    ps.append(Program("svd_u_only", lambda a: jnp.linalg.svd(a, full_matrices=False)[0][:, 0] ** 2, [a],
                      "jnp.linalg.svd, only U used (the other results printed as `_`)", build=True))
    ps.append(Program("eigh_values", lambda s: jnp.linalg.eigh(s)[0], [s], "jnp.linalg.eigh, eigenvalues only"))
    ps.append(Program("cholesky_solve", lambda s, b: jsp.linalg.cho_solve(jsp.linalg.cho_factor(s), b),
                      [s, f32(2, 4)], "jax.scipy.linalg.cho_factor/cho_solve"))
    ps.append(Program("slogdet_inv", lambda s: (jnp.linalg.slogdet(s)[1], jnp.linalg.inv(s)), [s], "slogdet, inv"))
    ps.append(Program("polysub_polyval", lambda p, q, x: jnp.polyval(jnp.polysub(p, q), x),
                      [f32(3, 4), f32(4, 3), f32(5, 5)], "jnp.polysub, jnp.polyval"))
    ps.append(Program("polymul_roots_free", lambda p, q: jnp.polymul(p, q), [f32(6, 3), f32(7, 4)], "jnp.polymul"))
    ps.append(Program("rfft_power", lambda x: jnp.abs(jnp.fft.rfft(x)) ** 2, [f32(8, 16)], "jnp.fft.rfft power spectrum"))
    ps.append(Program("fft_convolve", lambda x, k: jsp.signal.fftconvolve(x, k, mode="same"), [f32(9, 12), f32(10, 5)],
                      "jax.scipy.signal.fftconvolve"))
    ps.append(Program("logsumexp_softmax_poly", lambda x: (jsp.special.logsumexp(x, axis=-1), jax.nn.softmax(x)),
                      [f32(11, 3, 5)], "logsumexp and softmax exported with a symbolic batch", poly=["b, 5"]))
    ps.append(Program("matmul_poly", lambda x, w: jnp.tanh(x @ w).mean(axis=0), [f32(12, 3, 4), f32(13, 4, 2)],
                      "a dense layer exported with symbolic batch and width", poly=["b, k", "k, 2"]))
    ps.append(Program("cumsum_sort_poly", lambda x: (jnp.cumsum(x), jnp.sort(x), jnp.argmax(x)), [f32(14, 7)],
                      "cumsum, sort, argmax on a vector of symbolic length", poly=["n"]))
    ps.append(Program("qr_raw", lambda a: jnp.linalg.qr(a, mode="raw"), [a],
                      "jnp.linalg.qr(mode='raw'), as lineax calls it: LAPACK's Householder form (`geqrf`)"))

    def ormqr_four_ways(a, c, d):
        h, taus = jnp.linalg.qr(a, mode="raw")
        return tuple(lax.linalg.ormqr(h.mT, taus, x, left=left, transpose=transpose)
                     for x, left in ((c, True), (d, False)) for transpose in (False, True))
    ps.append(Program("ormqr_four_ways", ormqr_four_ways, [a, f32(15, 6, 3), f32(16, 2, 6)],
                      "lax.linalg.ormqr: Q c, Q^T c, c Q, c Q^T from geqrf's reflectors, as lineax's QR solve applies Q"))
    z = (f32(17, 5) + 1j * f32(18, 5)).astype(jnp.complex64)
    dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    ps.append(Program("gather_fill_complex", lambda z, i: lax.gather(
        z, i[:, None], dnums, (1,), mode=lax.GatherScatterMode.FILL_OR_DROP),
        [z, jnp.array([4, 7, 0, -9], dtype=jnp.int32)],
        "a complex gather out of bounds, FILL_OR_DROP without a fill_value: JAX fills NaN for every inexact dtype"))
    ps.append(Program("vmap_psum_center", jax.vmap(lambda x: x - lax.psum(x, "batch") / 6.0, axis_name="batch"), [a],
                      "centering a batch with lax.psum over vmap's axis_name (a `psum` over a positional axis)"))
    return ps
