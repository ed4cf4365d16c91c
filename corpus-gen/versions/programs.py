"""Programs of JAX's own tests that the checker once judged more strictly than JAX
does, written as those tests write them (jax 0.10.2's random_test.py,
lax_test.py's out_dtype ops, shape_poly_test.py's `pad` and `random.choice`
harnesses), each with the inputs its values are computed at. A program that
this JAX cannot express is left out for it."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

VERSION = tuple(int(x) for x in jax.__version__.split(".")[:3])


class Program:
    """`fn` at `args`; with `poly` (jax.export shape specs, one per argument),
    printed traced at those symbolic shapes and computed at `args`."""
    def __init__(self, name, fn, args, source, poly=None, build=True, constraints=()):
        self.name, self.fn, self.args, self.source = name, fn, list(args), source
        self.poly, self.build, self.constraints = poly, build, tuple(constraints)


def threefry2x32_p():
    try:
        from jax._src.random.threefry2x32 import threefry2x32_p as p
    except ImportError:  # jax < 0.9 keeps it in prng.py
        from jax._src.prng import threefry2x32_p as p
    return p


def double_threefry_impl():
    """random_test.py's `double_threefry_prng_impl`: a PRNG implementation whose
    key data is u32[2, 2] (two threefry keys), tagged `fry2`."""
    try:
        from jax._src.random import prng
        from jax._src.random import threefry2x32 as fry
    except ImportError:  # jax < 0.9
        from jax._src import prng
        fry = prng
    if not hasattr(prng, "PRNGImpl"):
        return None

    def seed(s):
        int_t = s.dtype.type if hasattr(s, "dtype") else type(s)
        return jnp.vstack([fry.threefry_seed(s), fry.threefry_seed(s ^ int_t(3))])

    def split(key, shape):
        return jax.vmap(fry.threefry_split, (0, None), len(shape))(key, shape)

    def random_bits(key, bit_width, shape):
        return fry.threefry_random_bits(key[0], bit_width, shape)

    def fold_in(key, data):
        return jnp.vstack([fry.threefry_fold_in(key[0], data), fry.threefry_fold_in(key[1], data)])

    return prng.PRNGImpl(key_shape=(2, 2), seed=seed, split=split, random_bits=random_bits,
                         fold_in=fold_in, tag="fry2")


def programs():
    ps = []
    u32 = lambda seed, *shape: np.random.RandomState(seed).randint(
        0, 2**32 - 1, size=shape, dtype=np.uint64).astype(np.uint32)
    # threefry2x32's abstract evaluation broadcasts its operands
    # (lax.broadcasting_shape_rule: scalars aside, equal ranks, 1s stretch).
    ps.append(Program("threefry_scalar_keys", lambda k1, k2, x1, x2: threefry2x32_p().bind(k1, k2, x1, x2),
                      [u32(1), u32(2), u32(3, 5), u32(4, 5)],
                      "random_test.py: threefry2x32 with scalar key words and vector counts"))
    ps.append(Program("threefry_ones_stretch", lambda k1, k2, x1, x2: threefry2x32_p().bind(k1, k2, x1, x2),
                      [u32(1, 1, 4), u32(2, 1, 4), u32(3, 3, 1), u32(4, 3, 4)],
                      "threefry2x32 on operands whose 1-sized axes broadcast"))
    # random_unwrap of a key array (jax.random.key_data of split keys).
    ps.append(Program("key_data_of_split_keys",
                      lambda seed: jax.random.key_data(jax.random.split(jax.random.key(seed), 3)),
                      [np.uint32(7)], "random_test.py: key_data of a key array"))
    ps.append(Program("key_data_of_key_matrix",
                      lambda seed: jax.random.key_data(
                          jax.random.split(jax.random.key(seed), 6).reshape(2, 3)) + jnp.uint32(1),
                      [np.uint32(9)], "random_test.py: key_data of a 2-d key array"))
    for impl in ("rbg", "unsafe_rbg"):
        ps.append(Program(f"key_data_of_{impl}_keys",
                          lambda seed, impl=impl: jax.random.key_data(
                              jax.random.split(jax.random.key(seed, impl=impl), 2)),
                          [np.uint32(3)], f"random_test.py: key_data of {impl} key arrays", build=False))
    double = double_threefry_impl()
    if double is not None:
        ps.append(Program("key_data_of_custom_impl_keys",
                          lambda seed: jax.random.key_data(
                              jax.random.split(jax.random.key(seed, impl=double), 3)),
                          [np.uint32(5)],
                          "random_test.py: key_data of a PRNGImpl with key_shape (2, 2)", build=False))
    ps.append(Program("key_data_under_vmap",
                      jax.vmap(lambda k: jax.random.key_data(jax.random.split(k, 2))),
                      [jax.random.split(jax.random.key(4), 3)],
                      "random_test.py: key_data of split keys, vmapped over a key array", build=False))
    if VERSION >= (0, 4, 36):
        # lax_test.py's LAX_OUT_DTYPE_OPS with a 64-bit out_dtype and x64 off:
        # JAX prints the class asked for and types the result as canonicalised (f32).
        x = np.random.RandomState(5).standard_normal((3, 4)).astype(np.float32)
        y = np.random.RandomState(6).standard_normal((3, 4)).astype(np.float32)
        if "out_dtype" in lax.mul.__code__.co_varnames:
            ps.append(Program("mul_out_dtype_float64", lambda a, b: lax.mul(a, b, out_dtype=np.float64),
                              [x, y], "lax_test.py: mul with out_dtype=np.float64, x64 off"))
            ps.append(Program("mul_out_dtype_int64", lambda a, b: lax.mul(a, b, out_dtype=np.int64),
                              [x.astype(np.int32), y.astype(np.int32)],
                              "lax_test.py: mul with out_dtype=np.int64, x64 off"))
    # Shape-polymorphic harnesses of shape_poly_test.py.
    v = np.arange(7, dtype=np.float32)
    ps.append(Program("pad_reflect_symbolic", lambda x: jnp.pad(x, (1, 2), mode="reflect"),
                      [v], "shape_poly_test.py: jnp.pad mode=reflect", poly=["b + 2"]))
    m = np.arange(15, dtype=np.float32).reshape(5, 3)
    ps.append(Program("pad_symmetric_symbolic", lambda x: jnp.pad(x, ((2, 1), (0, 1)), mode="symmetric"),
                      [m], "shape_poly_test.py: jnp.pad mode=symmetric", poly=["b + 2, 3"]))
    ps.append(Program("random_choice_symbolic",
                      lambda x: jax.random.choice(jax.random.key(0), x, shape=(3,)),
                      [v], "shape_poly_test.py: random.choice with replacement", poly=["b"]))
    # shape_poly_test.py's harnesses exported under `symbolic_constraints`.
    x35 = np.random.RandomState(7).standard_normal((3, 5)).astype(np.float32)
    for mode, reflect_type, lead in [("reflect", "odd", 1), ("reflect", "even", 1), ("symmetric", "odd", 0)]:
        ps.append(Program(f"pad_{mode}_{reflect_type}_constrained",
                          lambda x, mode=mode, rt=reflect_type, lead=lead: jnp.pad(
                              x, [[x.shape[0] - lead, 0], [x.shape[1], 1]], mode=mode, reflect_type=rt),
                          [x35], f"shape_poly_test.py: jnp.pad mode={mode}_{reflect_type}",
                          poly=["b, ..."], constraints=["b >= 2"]))
    key = np.array([0, 42], np.uint32)
    a = np.random.RandomState(8).standard_normal((64, 12, 4)).astype(np.float32)
    # (arr_poly, shape_poly, replace, use_p) of the harness `random_choice`
    # that export; the last two are the ones once judged inconclusive.
    for arr_poly, shape_poly, replace, use_p in [(True, False, False, True), (True, True, False, True),
                                                 (False, True, False, False), (False, True, True, False)]:
        cons = ["b1 >= 12"] * arr_poly + ["b1 >= b3*b4"] * (arr_poly and shape_poly) + ["12 >= b3*b4"] * shape_poly
        ps.append(Program(
            f"random_choice_arr_poly={arr_poly}_shape_poly={shape_poly}_replace={replace}_use_p={use_p}",
            lambda k, a, r, replace=replace, use_p=use_p: jax.random.choice(
                jax.random.wrap_key_data(k), a, shape=r.shape,
                p=jnp.full((a.shape[1],), 0.1, dtype=np.float32) if use_p else None, axis=1, replace=replace),
            [key, a, np.zeros((3, 4), np.float32)],
            f"shape_poly_test.py: random_choice arr_poly={arr_poly} shape_poly={shape_poly} "
            f"replace={replace} use_p={use_p}",
            poly=[None, "b0, b1, b2" if arr_poly else None, "b3, b4" if shape_poly else None],
            constraints=cons, build=False))
    return ps
