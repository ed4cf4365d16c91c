"""The programs of the builds corpus (corpus-gen/builds/gen.py), each with the
inputs its values are computed at. A program that this JAX cannot express (a
primitive or parameter of a later release) is left out for it."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from folder import Program

VERSION = tuple(int(x) for x in jax.__version__.split(".")[:3])


def rng(seed):
    return np.random.RandomState(seed)


def f32(seed, *shape):
    return rng(seed).standard_normal(shape).astype(np.float32)


def scatter_gather():
    """Issue 29: `scatter-add` and `gather` with operand batching dims (jax >= 0.4.31
    prints them; `take_along_axis` and its gradient use them)."""
    ps = []
    x = f32(1, 3, 4)
    i = np.array([[0, 2], [3, 3], [1, -1]], np.int32)
    ps.append(Program("take_along_axis_axis1", lambda x, i: jnp.take_along_axis(x, i, axis=1),
                      [x, i], "jnp.take_along_axis"))
    ps.append(Program("take_along_axis_axis1_grad",
                      jax.grad(lambda x, i: (jnp.take_along_axis(x, i, axis=1) ** 2).sum()),
                      [x, i], "jax.grad of jnp.take_along_axis (a flax nnx train step's loss)"))
    x3 = f32(2, 2, 3, 5)
    i3 = rng(3).randint(-3, 3, size=(2, 4, 5)).astype(np.int32)
    ps.append(Program("take_along_axis_3d_axis1_grad",
                      jax.grad(lambda x, i: (jnp.sin(jnp.take_along_axis(x, i, axis=1))).sum()),
                      [x3, i3], "jax.grad of jnp.take_along_axis, batch dims before and after the axis"))
    i4 = rng(4).randint(0, 2, size=(1, 3, 5)).astype(np.int32)
    ps.append(Program("take_along_axis_3d_axis0_grad",
                      jax.grad(lambda x, i: (jnp.take_along_axis(x, i, axis=0) * 3.0).sum()),
                      [x3, i4], "jax.grad of jnp.take_along_axis along the first axis"))
    # Softmax cross-entropy as optax computes it, and its gradient (the train step's loss).
    logits = f32(5, 4, 6)
    labels = np.array([1, 5, 0, 3], np.int32)

    def xent(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, labels[:, None], axis=-1).mean()
    ps.append(Program("cross_entropy_grad", jax.grad(xent), [logits, labels],
                      "optax.softmax_cross_entropy_with_integer_labels' loss, differentiated"))
    if VERSION >= (0, 4, 31):
        # lax.scatter_add with batching dims that are not the leading ones.
        op = f32(6, 4, 3, 2)
        idx = np.array([[[1], [0], [1]], [[3], [3], [0]]], np.int32)  # [2 (batch b), 3 (batch a), 1]
        upd = f32(7, 2, 3)
        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,),
                                         operand_batching_dims=(1, 2),
                                         scatter_indices_batching_dims=(1, 0))
        ps.append(Program("scatter_add_batching_dims_permuted",
                          lambda o, i, u: lax.scatter_add(o, i, u, dn, mode=lax.GatherScatterMode.FILL_OR_DROP),
                          [np.zeros((4, 3, 2), np.float32) + op, idx, upd],
                          "lax.scatter_add, operand_batching_dims=(1, 2) matched to indices dims (1, 0)"))
        # Batching dims with a window dimension and two scatter dims per batch.
        op2 = f32(8, 3, 5, 4)
        idx2 = np.array([[[0], [2], [4]], [[1], [1], [3]], [[4], [0], [2]]], np.int32)  # [3 batch, 3, 1]
        upd2 = f32(9, 3, 3, 4)
        dn2 = lax.ScatterDimensionNumbers(update_window_dims=(2,), inserted_window_dims=(1,),
                                          scatter_dims_to_operand_dims=(1,),
                                          operand_batching_dims=(0,),
                                          scatter_indices_batching_dims=(0,))
        ps.append(Program("scatter_add_batching_dims_window",
                          lambda o, i, u: lax.scatter_add(o, i, u, dn2, mode=lax.GatherScatterMode.FILL_OR_DROP),
                          [op2, idx2, upd2],
                          "lax.scatter_add with a batching dim, a window dim and repeated indices"))
        gdn = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,),
                                         start_index_map=(1,), operand_batching_dims=(0,),
                                         start_indices_batching_dims=(0,))
        ps.append(Program("gather_batching_dims_window",
                          lambda o, i: lax.gather(o, i, gdn, slice_sizes=(1, 1, 4), mode=lax.GatherScatterMode.FILL_OR_DROP),
                          [op2, idx2], "lax.gather with a batching dim and a window dim"))
        gop = f32(10, 4, 3, 2)
        gidx = np.array([[[1], [0], [3]], [[3], [2], [0]]], np.int32)  # [2 (operand dim 2), 3 (operand dim 1), 1]
        gdn2 = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                          start_index_map=(0,), operand_batching_dims=(1, 2),
                                          start_indices_batching_dims=(1, 0))
        ps.append(Program("gather_batching_dims_permuted",
                          lambda o, i: lax.gather(o, i, gdn2, slice_sizes=(1, 1, 1), mode=lax.GatherScatterMode.CLIP),
                          [gop, gidx], "lax.gather, operand_batching_dims=(1, 2) matched to indices dims (1, 0)"))
    return ps


def converts():
    """Issue 29: `convert_element_type` between bf16 and f16 (same width, neither
    holds the other; XLA converts through f32)."""
    v = np.array([0.1, -2.5, 3.14159, 65504.0, 70000.0, 1e-6, -1e-8, 1e30, np.inf, -np.inf, np.nan, 0.0],
                 np.float32)
    with np.errstate(over="ignore"):  # 70000 and 1e30 are inf in f16, as in JAX
        h = v.astype(np.float16)
    return [
        Program("convert_bf16_to_f16", lambda x: x.astype(jnp.float16) * jnp.float16(2),
                [v.astype(jnp.bfloat16)], "jnp.astype bfloat16 -> float16"),
        Program("convert_f16_to_bf16", lambda x: x.astype(jnp.bfloat16) + jnp.bfloat16(1),
                [h], "jnp.astype float16 -> bfloat16"),
    ]


def literals():
    """Issue 29: Python scalars in programs. JAX <= 0.5 prints their literals
    without a type (`mul b 2.0`); the build gives each the dtype JAX gave it."""
    x = f32(20, 2, 3)
    h = x.astype(np.float16)
    n = rng(21).randint(-5, 6, size=(2, 3)).astype(np.int32)
    u = rng(22).randint(0, 9, size=(4,)).astype(np.uint8)
    y = f32(23, 2, 3)
    return [
        Program("literal_add_mul", lambda x: x * 2.0 + 1.5, [x], "Python floats beside f32"),
        Program("literal_f16", lambda h: h * 3.0 - 0.25, [h], "Python floats beside f16 (weak types)"),
        Program("literal_int", lambda n: (n + 3) * 2 - 1, [n], "Python ints beside i32"),
        Program("literal_uint8", lambda u: u * 3 + 250, [u], "Python ints beside u8 (wrapping)"),
        Program("literal_int_floordiv", lambda n: n // 2 + n % 3, [n], "floor division and remainder by Python ints"),
        Program("literal_relu_max", lambda x: jnp.maximum(x, 0.0) + jnp.minimum(x, -0.5), [x], "max/min with Python floats"),
        Program("literal_where", lambda x: jnp.where(x > 0.5, x, 0.0), [x], "jnp.where with a Python scalar case"),
        Program("literal_where_int", lambda n: jnp.where(n >= 0, n, -1), [n], "jnp.where on i32 with a Python int"),
        Program("literal_select", lambda x, y: lax.select(x < y, x, jnp.full_like(x, 7.0)), [x, y], "lax.select"),
        Program("literal_pow", lambda x: jnp.abs(x) ** 1.5 + x ** 2 + x ** 3, [x], "float and integer powers"),
        Program("literal_integer_pow", lambda x: lax.integer_pow(x, 3) * 0.5, [x], "lax.integer_pow"),
        Program("literal_comparisons", lambda x, n: ((x >= 0.0) & (x < 1.0), n == 2, n != 0, x <= -1.0),
                [x, n], "comparisons with Python scalars"),
        Program("literal_clip", lambda x: jnp.clip(x, -0.5, 0.5), [x], "jnp.clip with Python bounds"),
        Program("literal_jit", lambda x: jax.jit(lambda a, b: a * b)(x, 3.0), [x], "a Python scalar passed to a jit"),
        Program("literal_cond", lambda x: lax.cond(x.sum() > 0.0, lambda a: a + 1.0, lambda a: a - 1.0, x),
                [x], "lax.cond with Python scalars in its branches"),
        Program("literal_fori", lambda x: lax.fori_loop(0, 3, lambda i, a: a * 0.5 + i, x), [x],
                "lax.fori_loop: int bounds and a float scale"),
        Program("literal_full_pad", lambda x: jnp.pad(x, 1, constant_values=-2.0) + jnp.ones((4, 5)), [x],
                "jnp.pad and jnp.ones: literals as fill values"),
        # jax 0.4.30 prints a bare `inf` here: the literal, not a variable.
        Program("literal_softplus_grad", jax.grad(lambda x: jax.nn.softplus(2.0 * x).sum()), [x],
                "the gradient of a function with Python scalars"),
    ]


def unstacks():
    """Issue 29: `unstack` (a primitive of jax 0.10: `lax.unstack`, and the
    transpose of `stack`)."""
    if VERSION < (0, 10):
        return []
    x = f32(30, 3, 2, 4)
    return [
        Program("unstack_axis0", lambda x: lax.unstack(x, axis=0), [x], "lax.unstack along the first axis"),
        Program("unstack_axis2", lambda x: tuple(p * (k + 1) for k, p in enumerate(lax.unstack(x, axis=2))),
                [x], "lax.unstack along the last axis"),
        Program("unstack_stack_grad", jax.grad(lambda x: (jnp.stack([x, 2 * x, x * x], axis=1) ** 2).sum()),
                [x], "the gradient of jnp.stack (its transpose is unstack)"),
    ]


def symbolic_scans():
    """Issue 29: a `scan` whose `length` is symbolic (`length=b`: scanning an
    array of a shape-polymorphic program)."""
    if VERSION < (0, 10):
        return []
    xs = f32(40, 5, 3)
    fwd = lambda xs: lax.scan(lambda c, x: (c * 0.5 + x, c * x), jnp.zeros(3, jnp.float32), xs)
    rev = lambda xs: lax.scan(lambda c, x: (c + jnp.sin(x), c - x), jnp.ones(3, jnp.float32), xs, reverse=True)
    return [
        Program("scan_symbolic_length", fwd, [xs], "lax.scan over xs of shape (b, 3)", poly=["b, 3"]),
        Program("scan_symbolic_length_reverse", rev, [f32(41, 7, 3)], "reversed lax.scan over xs of shape (2*b + 1, 3)",
                poly=["2*b + 1, 3"]),
        Program("cumsum_symbolic_fori", lambda xs: lax.fori_loop(0, xs.shape[0], lambda i, c: c + xs[i], jnp.zeros(3)),
                [xs], "lax.fori_loop to a symbolic bound", poly=["b, 3"]),
    ]


def random_bits():
    """`random_bits` and `random_split` of threefry keys with
    `jax_threefry_partitionable` off and on: the same jaxpr, other bits
    (`jaxpr build --threefry-partitionable false`)."""
    ps = []
    seed = np.array(7, np.int32)
    for on in (False, True):
        tag = "partitionable" if on else "original"

        def uniform(seed):
            return jax.random.uniform(jax.random.PRNGKey(seed), (3, 5))
        ps.append(Program(f"threefry_{tag}_uniform", uniform, [seed], "jax.random.uniform of an odd count", threefry_partitionable=on))

        def split_normal(seed):
            k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
            ks = jax.random.split(k2, (2, 3))
            return jax.random.normal(k1, (4,)), jax.random.key_data(ks) if VERSION >= (0, 4, 16) else ks
        ps.append(Program(f"threefry_{tag}_split_normal", split_normal, [seed], "jax.random.split (and into a shape) then normal", threefry_partitionable=on))

        def narrow_and_wide(seed):
            k = jax.random.PRNGKey(seed)
            return (jax.random.bits(k, (7,), jnp.uint8), jax.random.bits(k, (3, 3), jnp.uint16),
                    jax.random.randint(k, (5,), 0, 100))
        ps.append(Program(f"threefry_{tag}_bits_8_16", narrow_and_wide, [seed], "jax.random.bits of 8 and 16 bits, randint", threefry_partitionable=on))

        def typed_keys(seed):
            keys = jax.random.split(jax.random.key(seed), 3)
            return jax.vmap(lambda k: jax.random.uniform(k, (5,)))(keys)
        ps.append(Program(f"threefry_{tag}_typed_key_batch", typed_keys, [seed], "jax.random.key, split, uniform of a batch of keys", threefry_partitionable=on))
    return ps


def programs():
    return scatter_gather() + converts() + literals() + unstacks() + symbolic_scans() + random_bits()
