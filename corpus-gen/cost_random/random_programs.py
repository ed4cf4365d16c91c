"""Differential testing of the cost model (`crates/cost`, `jaxpr stats`)
against XLA's own cost analysis of JAX's lowering (jax 0.10.2, CPU).

Each seed makes one random program: an input of random shape (sizes 0-5,
rank 0-3) and dtype, then 1-4 steps, each a random `lax`/`jnp` operation
with random parameters (elementwise unary and binary arithmetic,
comparisons, `select_n`, conversions, `broadcast_in_dim`, `reshape`,
`transpose`, `slice`, `dynamic_slice`, `dynamic_update_slice`,
`concatenate`, `pad`, `rev`, `gather`/`scatter` by indexing, `iota`,
`clamp`, reductions, `argmax`, `cumsum`/`cumprod`/`cummax`, `sort`,
`dot_general`, `conv_general_dilated` with strides, padding and dilation)
or control flow around a nested step (`cond`, `scan`, `fori_loop` as
`while`, `jit`). JAX traces it (`jax.make_jaxpr`) and XLA costs it: the
figures of `corpus-gen/xla_cost.py` (`jax.jit(f).lower(*args)
.cost_analysis()`, what the corpora's `cost.json` hold and the cost model
is held to), and those of the compiled program (`.compile()
.cost_analysis()`, after XLA's optimisation passes) for information. A
program's closed-over constants (gather indices) are recorded beside it in
`NAME.recorded.json`, as the Python API records them: `jaxpr stats` reads
which are splats from it.

    PY=$(bash tests/trace/venv.sh jax 0.10.2)
    # the full run: programs and XLA's figures into DIR, then the comparison
    $PY corpus-gen/cost_random/random_programs.py run 2000 DIR target/release/jaxpr
    # the committed sample (fixed seeds) with XLA's figures in cost.json
    $PY corpus-gen/cost_random/random_programs.py sample 300 tests/data/cost-random
"""
import collections
import json
import os
import random as pyrandom
import subprocess
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xla_cost import cost  # noqa: E402
import folder  # noqa: E402

# The values the text lacks (closed-over constants), recorded beside it as
# the Python API and `jaxpr trace` record them: `jaxpr stats` reads which
# constants are splats from them.
recorder = folder.load(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "wheel", "python", "jaxpr", "_recorded.py"), "recorded")

SAMPLE_BASE = 0
RUN_BASE = 2_000_000
FLOATS = [jnp.float32, jnp.float32, jnp.float16, jnp.bfloat16]
INTS = [jnp.int32, jnp.int8, jnp.uint8, jnp.uint32]
DTYPES = FLOATS * 2 + INTS + [jnp.bool_]
SIZES = [0, 1, 1, 2, 3, 3, 4, 5]


def is_float(x):
    return jnp.issubdtype(x.dtype, jnp.floating)


def as_float(x):
    return x if is_float(x) else x.astype(jnp.float32)


def as_num(x):
    return x.astype(jnp.int32) if x.dtype == jnp.bool_ else x


UNARY_FLOAT = [jnp.negative, jnp.abs, jnp.sin, jnp.cos, jnp.exp, jnp.log, jnp.tanh, jnp.sqrt,
               lax.rsqrt, jnp.floor, jnp.ceil, jnp.round, jnp.sign, jax.nn.sigmoid, jnp.log1p,
               jnp.expm1, jnp.square, lambda x: x ** 3, lambda x: lax.integer_pow(x, 2),
               jnp.tan, jax.nn.relu, lambda x: lax.reduce_precision(x, 5, 10), jnp.isfinite,
               jnp.exp2, jnp.arctan, lax.erf]
UNARY_ANY = [jnp.negative, jnp.abs, jnp.sign, lambda x: x * x, lambda x: x + 1,
             lambda x: jnp.bitwise_not(x) if not is_float(x) else -x]
BINARY = [jnp.add, jnp.subtract, jnp.multiply, jnp.maximum, jnp.minimum, jnp.less, jnp.equal,
          jnp.greater_equal, jnp.not_equal]
BINARY_FLOAT = [jnp.divide, jnp.power, jnp.arctan2, lax.rem, lax.nextafter]
BINARY_INT = [lax.div, lax.rem, jnp.bitwise_and, jnp.bitwise_or, jnp.bitwise_xor,
              lax.shift_left, lax.shift_right_logical, lax.shift_right_arithmetic]


class Program:
    def __init__(self, seed):
        self.seed = seed
        r = pyrandom.Random(seed)
        rank = r.choice([0, 1, 1, 2, 2, 2, 3, 3])
        self.shape = tuple(r.choice(SIZES) for _ in range(rank))
        self.dtype = r.choice(DTYPES)
        self.steps = r.randint(1, 4)

    def arg(self):
        rng = np.random.default_rng(self.seed)
        return np.asarray(rng.uniform(0.5, 3.0, self.shape)).astype(self.dtype)

    def __call__(self, x):
        self.r = pyrandom.Random(self.seed * 7 + 1)
        for _ in range(self.steps):
            x = self.step(x, depth=0)
        return x

    def step(self, x, depth):
        """One random operation on `x`; one that JAX refuses is redrawn."""
        for _ in range(20):
            op = self.r.choice(OPS if depth < 2 else LEAF_OPS)
            try:
                return op(self, x, depth)
            except (TypeError, ValueError, IndexError, ZeroDivisionError):
                continue
        return x

    # Elementwise
    def unary(self, x, _):
        f = self.r.choice(UNARY_FLOAT if is_float(x) else UNARY_ANY)
        return f(x)

    def binary(self, x, _):
        r = self.r
        pool = BINARY + (BINARY_FLOAT if is_float(x) else BINARY_INT if x.dtype != jnp.bool_ else [])
        f = r.choice(pool)
        how = r.choice(["self", "scalar", "literal", "row"])
        if how == "self":
            y = x[::-1] if x.ndim else x
        elif how == "scalar":
            y = jnp.asarray(r.choice([2, 3]), x.dtype) if x.dtype != jnp.bool_ else jnp.asarray(True)
        elif how == "literal":
            y = r.choice([1, 2, 0.5]) if is_float(x) else r.choice([1, 2])
            return f(y, x) if r.random() < 0.3 else f(x, y)
        else:
            y = jnp.ones(x.shape[-1:], x.dtype)
        return f(x, y) if x.dtype != jnp.bool_ or f in (jnp.equal, jnp.not_equal) else f(as_num(x), as_num(y))

    def where(self, x, _):
        c = (as_num(x) > 1) if x.dtype != jnp.bool_ else x
        other = jnp.zeros_like(x) if self.r.random() < 0.5 else (x[::-1] if x.ndim else x)
        return jnp.where(c, x, other)

    def convert(self, x, _):
        return x.astype(self.r.choice(DTYPES))

    def clamp(self, x, _):
        x = as_num(x)
        return lax.clamp(jnp.asarray(1, x.dtype), x, jnp.asarray(2, x.dtype))

    # Shapes and data movement
    def broadcast(self, x, _):
        n = self.r.choice([0, 1, 2, 3])
        return jnp.broadcast_to(x, (n,) + x.shape)

    def reshape(self, x, _):
        return x.reshape((-1,)) if self.r.random() < 0.6 or x.size == 0 else x.reshape((1, x.size))

    def transpose(self, x, _):
        perm = list(range(x.ndim))
        self.r.shuffle(perm)
        return jnp.transpose(x, perm)

    def slice(self, x, _):
        if x.ndim == 0:
            raise ValueError
        n = x.shape[0]
        a = self.r.randint(0, n)
        b = self.r.randint(a, n)
        s = self.r.choice([1, 1, 2])
        return x[a:b:s]

    def dyn_slice(self, x, _):
        if x.ndim == 0:
            raise ValueError
        size = self.r.randint(0, x.shape[0])
        i = jnp.int32(self.r.randint(0, 3)) if self.r.random() < 0.5 else self.r.randint(0, 3)
        return lax.dynamic_slice_in_dim(x, i, size)

    def dyn_update(self, x, _):
        if x.ndim == 0 or x.shape[0] == 0:
            raise ValueError
        u = x[:1] * 2 if x.dtype != jnp.bool_ else x[:1]
        return lax.dynamic_update_slice_in_dim(x, u, self.r.randint(0, x.shape[0]), 0)

    def concat(self, x, _):
        if x.ndim == 0:
            raise ValueError
        return jnp.concatenate([x, x[:1]] if self.r.random() < 0.5 else [x, x, x], axis=self.r.randrange(x.ndim))

    def pad(self, x, _):
        cfg = [(self.r.randint(-1, 2), self.r.randint(0, 2), self.r.randint(0, 1)) for _ in range(x.ndim)]
        return lax.pad(x, jnp.asarray(0, x.dtype), cfg)

    def rev(self, x, _):
        if x.ndim == 0:
            raise ValueError
        return lax.rev(x, (self.r.randrange(x.ndim),))

    def gather(self, x, _):
        if x.ndim == 0 or x.shape[0] == 0:
            raise ValueError
        idx = jnp.array([self.r.randrange(x.shape[0]) for _ in range(self.r.randint(1, 3))])
        return x[idx]

    def scatter(self, x, _):
        if x.ndim == 0 or x.shape[0] == 0:
            raise ValueError
        i = self.r.randrange(x.shape[0])
        x = as_num(x)
        how = self.r.choice(["set", "add", "mul", "max"])
        return getattr(x.at[i], how)(jnp.asarray(1, x.dtype))

    def iota(self, x, _):
        n = self.r.choice([0, 1, 3, 4])
        return x + jnp.arange(n, dtype=x.dtype).reshape((n,) + (1,) * x.ndim) if x.dtype != jnp.bool_ else jnp.arange(n)

    # Reductions and scans
    def reduce(self, x, _):
        f = self.r.choice([jnp.sum, jnp.max, jnp.min, jnp.prod, jnp.any, jnp.argmax, jnp.mean])
        axis = self.r.choice([None] + list(range(x.ndim)))
        if f in (jnp.max, jnp.min, jnp.argmax) and (x.size == 0):
            raise ValueError
        return f(x, axis=axis) if f is not jnp.any else jnp.any(x > 1, axis=axis)

    def cumulative(self, x, _):
        if x.ndim == 0:
            raise ValueError
        f = self.r.choice([jnp.cumsum, jnp.cumprod, lax.cummax, lax.cumsum])
        axis = self.r.randrange(x.ndim)
        x = as_num(x)
        return f(x, axis=axis) if f in (jnp.cumsum, jnp.cumprod) else f(x, axis)

    def sort(self, x, _):
        if x.ndim == 0:
            raise ValueError
        if self.r.random() < 0.3:
            return jnp.argsort(x, axis=-1)
        return jnp.sort(x, axis=self.r.randrange(x.ndim))

    # Linear algebra
    def dot(self, x, _):
        if x.ndim == 0 or x.dtype == jnp.bool_:
            raise ValueError
        k = x.shape[-1]
        n = self.r.choice([0, 1, 2, 3])
        w = jnp.ones((k, n), x.dtype)
        if x.ndim >= 2 and self.r.random() < 0.3:
            return jnp.einsum("...ij,...ij->...i", x, x)
        return x @ w

    def conv(self, x, _):
        if not is_float(x):
            raise ValueError
        r = self.r
        nd = r.choice([1, 2])
        n, c, o = r.choice([1, 2]), r.choice([1, 2]), r.choice([1, 2])
        sp = [r.choice([1, 2, 3, 5]) for _ in range(nd)]
        lhs = jnp.broadcast_to(jnp.sum(x), (n, c, *sp)).astype(x.dtype)
        ks = [r.choice([1, 2, 3]) for _ in range(nd)]
        rhs = jnp.ones((o, c, *ks), x.dtype)
        strides = [r.choice([1, 1, 2]) for _ in range(nd)]
        padding = r.choice(["VALID", "SAME", [(r.randint(0, 2), r.randint(0, 2)) for _ in range(nd)]])
        lhs_dil = [r.choice([1, 1, 2]) for _ in range(nd)]
        rhs_dil = [r.choice([1, 1, 2]) for _ in range(nd)]
        if isinstance(padding, str):
            lhs_dil = [1] * nd
        return lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil)

    # Control flow around a nested step
    def cond(self, x, depth):
        seed = self.r.randrange(1 << 30)
        return lax.cond(jnp.sum(as_float(x)) > 1, lambda v: self.nested(seed, v, depth),
                        lambda v: v, x)

    def scan(self, x, depth):
        seed = self.r.randrange(1 << 30)

        def body(c, _):
            y = self.nested(seed, c, depth)
            return (y if y.shape == c.shape and y.dtype == c.dtype else c), jnp.sum(as_float(y))
        c, ys = lax.scan(body, x, None, length=self.r.choice([1, 3]))
        return c if self.r.random() < 0.5 else ys

    def fori(self, x, depth):
        seed = self.r.randrange(1 << 30)

        def body(i, c):
            y = self.nested(seed, c, depth)
            return y if y.shape == c.shape and y.dtype == c.dtype else c
        return lax.fori_loop(0, jnp.int32(self.r.choice([1, 2])), body, x)

    def jit(self, x, depth):
        seed = self.r.randrange(1 << 30)
        return jax.jit(lambda v: self.nested(seed, v, depth))(x)

    def nested(self, seed, x, depth):
        saved = self.r
        self.r = pyrandom.Random(seed)
        y = self.step(x, depth + 1)
        self.r = saved
        return y


LEAF_OPS = [Program.unary] * 4 + [Program.binary] * 4 + [
    Program.where, Program.convert, Program.clamp, Program.broadcast, Program.reshape,
    Program.transpose, Program.slice, Program.dyn_slice, Program.dyn_update, Program.concat,
    Program.pad, Program.rev, Program.gather, Program.scatter, Program.iota, Program.reduce,
    Program.reduce, Program.cumulative, Program.sort, Program.dot, Program.dot, Program.conv]
OPS = LEAF_OPS + [Program.cond, Program.scan, Program.fori, Program.jit]


def figures(seed):
    """(text, XLA's figures of the lowering, of the compiled program)."""
    p = Program(seed)
    x = p.arg()
    closed = jax.make_jaxpr(p)(x)
    text, values = recorder.printed(closed, lambda: str(closed))
    text += "\n"
    lowered = cost(p, (x,))
    compiled = jax.jit(p).lower(x).compile().cost_analysis()
    if isinstance(compiled, list):
        compiled = compiled[0]
    compiled = {"flops": float(compiled.get("flops", 0.0)),
                "transcendentals": float(compiled.get("transcendentals", 0.0)),
                "bytes_accessed": float(compiled.get("bytes accessed", 0.0))}
    return text, values, lowered, compiled


def programs(base, count, out):
    """Writes the programs of seeds base..base+count and `cost.json`."""
    os.makedirs(out, exist_ok=True)
    recorded, compiled, failed = {}, {}, {}
    for seed in range(base, base + count):
        name = f"p{seed}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                text, values, low, comp = figures(seed)
        except Exception as e:  # noqa: BLE001 - counted, not judged
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            continue
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(text)
        if recorder.anything(values):
            recorder.write(os.path.join(out, name + ".recorded.json"), values)
        recorded[name], compiled[name] = low, comp
        if seed % 200 == 0:
            jax.clear_caches()
    with open(os.path.join(out, "cost.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}",
                   "generator": "corpus-gen/cost_random/random_programs.py",
                   "seeds": [base, base + count],
                   "xla": "jax.jit(f).lower(x).cost_analysis()",
                   "programs": recorded}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    with open(os.path.join(out, "compiled.json"), "w") as fh:
        json.dump({"compiled": compiled, "failed": failed}, fh, indent=1, sort_keys=True)
    return recorded, compiled, failed


KEYS = ["flops", "transcendentals", "bytes_accessed"]


def ours(jaxpr_bin, folder):
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jaxpr"))
    res = subprocess.run([jaxpr_bin, "stats", "--format", "json", "--xla-loops", *files],
                         capture_output=True, text=True)
    report = json.loads(res.stdout)
    out = {}
    for f in report["files"]:
        name = os.path.basename(f["file"])[:-len(".jaxpr")]
        out[name] = ({k: f["total"].get(k) for k in KEYS}, f.get("by_primitive", {}))
    return out


def compare(folder, jaxpr_bin):
    with open(os.path.join(folder, "cost.json")) as fh:
        recorded = json.load(fh)["programs"]
    with open(os.path.join(folder, "compiled.json")) as fh:
        compiled = json.load(fh)["compiled"]
    found = ours(jaxpr_bin, folder)
    exact, compiled_exact, wrong = 0, 0, []
    by_prim = collections.Counter()
    wrong_by_prim = collections.Counter()
    for name, xla in sorted(recorded.items()):
        got, prims = found[name]
        for p in prims:
            by_prim[p] += 1
        if all(got[k] == xla[k] for k in KEYS):
            exact += 1
        else:
            wrong.append((name, got, xla, sorted(prims)))
            for p in prims:
                wrong_by_prim[p] += 1
        compiled_exact += all(got[k] == compiled[name][k] for k in KEYS)
    return exact, compiled_exact, wrong, by_prim, wrong_by_prim, len(recorded)


def report(folder, jaxpr_bin):
    exact, cexact, wrong, by_prim, wrong_by_prim, n = compare(folder, jaxpr_bin)
    print(f"{n} programs: {exact} exact against the lowering's cost analysis "
          f"({100 * exact / max(n, 1):.2f}%), {cexact} against the compiled program's")
    print("primitive: programs with it, of them not exact")
    for p, c in sorted(by_prim.items(), key=lambda kv: -wrong_by_prim[kv[0]]):
        print(f"  {p}: {c}, {wrong_by_prim[p]}")
    with open(os.path.join(folder, "disagreements.json"), "w") as fh:
        json.dump(wrong, fh, indent=1)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "run":
        t0 = time.time()
        _, _, failed = programs(RUN_BASE, int(sys.argv[2]), sys.argv[3])
        print(f"traced and costed in {time.time() - t0:.0f} s; {len(failed)} JAX could not trace: "
              f"{collections.Counter(v.split(':')[0] for v in failed.values())}")
        report(sys.argv[3], sys.argv[4])
    elif cmd == "again":
        report(sys.argv[2], sys.argv[3])
    else:
        programs(SAMPLE_BASE, int(sys.argv[2]), sys.argv[3])
