"""Differential testing of the checker and both back ends against JAX (jax 0.10.2, CPU).

Each seed makes one random program with the cost generator's operations
(`corpus-gen/cost_random/random_programs.py`: an input of random shape, sizes 0-5 and rank 0-3,
and dtype, f32/f16/bf16/i32/i8/u8/u32/bool; then 1-4 random `lax`/`jnp` steps: elementwise
arithmetic and comparisons, conversions, array movements, gathers and scatters by indexing,
reductions, cumulative reductions, `sort`, `dot_general`, convolutions with strides, padding and
dilation, and `cond`/`scan`/`fori_loop`/`jit` around nested steps), which this generator wraps,
for a third of the seeds, in `jax.vmap` (over a leading axis of 2 or 3) or `jax.grad` (of the sum
of a floating result); three in ten are traced at symbolic shapes (`jax.export`: symbols shared
between equal extents, twice a symbol for some even extents, lower bounds and orders between
symbols as constraints; else every extent a symbol of its own) where JAX traces and exports them
so. JAX judges it twice: `jax.make_jaxpr` prints it and `check_jaxpr` accepts
it (the checker must report no error on it), and `jax.jit` runs JAX's lowering on XLA for the
values both back ends must give, each element within the larger of its dtype's bound and twice
XLA's own distance from the program's double-precision twin (`f64_twin`, an example's `twin`).

Written in the jax-suite format (`corpus-gen/jax/gen.py`): DIR/random/NAME.jaxpr,
`manifest.json` (the program's seed and JAX's verdict), `values.json.gz` (its input and XLA's
outputs) and, for a program whose nested closed jaxprs have constants (printed by name only),
NAME.recorded.json with their values, as the Python API records them. Judged by `crates/jaxpr-build/tests/jax_suite.rs`,
`random_programs_check_clean_and_build_with_jaxs_values`:

    PY=$(bash tests/trace/venv.sh jax 0.10.2)
    # the committed sample (fixed seeds; FOUND: full runs' seeds that found a disagreement;
    # SYMBOLIC: full runs' seeds with shared symbols, multiples and constraints)
    $PY corpus-gen/programs_random/random_programs.py sample 150 tests/data/programs-random
    # the full run (the folder is scratch), then its judgement
    $PY corpus-gen/programs_random/random_programs.py run 2000 /tmp/programs-run
    JAXPR_RANDOM_PROGRAMS=/tmp/programs-run cargo test --release -p jaxpr-build --test jax_suite random_programs
    # how far XLA's results lie from the double-precision twins, against the dtypes' bounds
    $PY corpus-gen/programs_random/random_programs.py sensitivity /tmp/programs-run
"""
import importlib.util
import json
import os
import random as pyrandom
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import encode  # noqa: E402


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


steps = _load(os.path.join(os.path.dirname(HERE), "cost_random", "random_programs.py"),
              "cost_random_programs")
# What the text lacks (a nested closed jaxpr's constants, printed by name only), recorded as the
# Python API and `jaxpr trace` record it, in NAME.recorded.json beside the text.
recorded = _load(os.path.join(os.path.dirname(os.path.dirname(HERE)), "wheel", "python", "jaxpr",
                              "_recorded.py"), "recorded")

SAMPLE_BASE = 0  # the committed sample's seeds: SAMPLE_BASE + i
RUN_BASE = 5_000_000  # the full run's seeds
GROUP = "random"
# Seeds of full runs whose programs found a disagreement, kept in the committed sample: scans
# and reshapes at symbolic shapes, `np.int64` in a dimension tuple, nested closed jaxprs' constants.
FOUND = [5000121, 5000314, 5000384, 5000421, 5000499, 5000616, 5000745, 5000944, 5001085,
         5001328, 5001385, 5001518, 5001676, 5001776]
# Full runs' seeds traced at symbolic shapes with symbols shared between extents, multiples of
# a symbol and constraints, kept in the committed sample so that CI checks and builds them.
SYMBOLIC = [5000208, 5000213, 5000246, 5000248, 5000290, 5000322, 5000347, 5000362, 5000376,
            5000394]


def make(seed):
    """The program of `seed`: (function, its argument, how it is wrapped)."""
    p = steps.Program(seed)
    x = p.arg()
    r = pyrandom.Random(seed * 13 + 5)
    wrap = r.choice(["plain"] * 4 + ["vmap", "grad"])
    if wrap == "vmap":
        n = r.choice([2, 3])
        xs = np.stack([x] + [np.asarray(x * (1 + 0.25 * k)).astype(x.dtype) for k in range(1, n)])
        return jax.vmap(p), xs, wrap
    if wrap == "grad" and jnp.issubdtype(x.dtype, jnp.floating):
        def loss(v):
            y = p(v)
            return jnp.sum(y.astype(jnp.float32)) if jnp.issubdtype(y.dtype, jnp.floating) \
                else jnp.sum(v)
        return jax.grad(loss), x, wrap
    return p, x, "plain"


def symbolic_spec(shape, r):
    """A `jax.export` shape spec for an input of `shape`, with constraints its extents satisfy:
    each extent a symbol, or (drawn by `r`) an equal extent's symbol again, twice a symbol for an
    even extent, and a lower bound or an order between two symbols as constraints."""
    terms, by_extent, values, constraints = [], {}, {}, []
    for i, n in enumerate(shape):
        if n in by_extent and r.random() < 0.5:
            terms.append(by_extent[n])
            continue
        name = f"d{i}"
        if n % 2 == 0 and r.random() < 0.3:
            term, values[name] = f"2*{name}", n // 2
        else:
            term, values[name] = name, n
        terms.append(term)
        by_extent.setdefault(n, term)
    names = sorted(values)
    if names and r.random() < 0.3:
        name = r.choice(names)
        constraints.append(f"{name} >= {r.randint(1, values[name])}")
    if len(names) >= 2 and r.random() < 0.3:
        a, b = r.sample(names, 2)
        if values[a] < values[b]:
            a, b = b, a
        constraints.append(f"{a} >= {b}")
    return ", ".join(terms), constraints


def record(seed):
    """(text, manifest entry, examples, nested constants) of the program of `seed`."""
    from jax._src import core
    fn, x, wrap = make(seed)
    cj = jax.make_jaxpr(fn)(x)
    symbolic, run = None, jax.jit(fn)
    if pyrandom.Random(seed * 17 + 3).random() < 0.3 and x.ndim and min(x.shape) >= 1:
        # Symbolic extents (`jax.export`'s symbolic shapes): symbols shared between equal extents,
        # multiples of a symbol and constraints (`symbolic_spec`), else every extent a symbol of
        # its own, where JAX traces and exports the program so. The values are the exported
        # program's at the concrete input: a step JAX refuses at symbolic shapes is redrawn, so
        # the program traced symbolically may differ from the concrete one.
        from jax import export
        own = ", ".join(f"d{i}" for i in range(x.ndim))
        # A seed kept for what it found keeps the spec it found it with.
        drawn = [] if seed in FOUND else [symbolic_spec(x.shape, pyrandom.Random(seed * 19 + 7))]
        for spec, constraints in drawn + [(own, [])]:
            try:
                specs = export.symbolic_args_specs((x,), (spec,), constraints=constraints)
                traced = jax.make_jaxpr(fn)(*specs)
                exported = export.export(jax.jit(fn))(*specs)
                cj, run = traced, exported.call
                symbolic = [spec] + ([{"constraints": constraints}] if constraints else [])
                break
            except Exception:  # noqa: BLE001  (needs a concrete extent: the next, else concrete)
                continue
    text, (constants, _, _, _) = recorded.printed(cj, lambda: str(cj))
    # The outermost jaxpr's constants are inputs, with the values.
    nested = {k: v for k, v in constants.items() if v["nested"]}
    try:
        core.check_jaxpr(cj.jaxpr)
        verdict, why = True, None
    except Exception as e:  # noqa: BLE001  (JAX's verdict is what is recorded)
        verdict, why = False, f"{type(e).__name__}: {e}"[:400]
    outs = jax.tree_util.tree_leaves(run(x))
    consts = [np.asarray(c) for c in cj.consts]
    examples = [{"inputs": [encode.array(c) for c in consts] + [encode.array(x)],
                 "outputs": [encode.array(np.asarray(o)) for o in outs]}]
    twin = f64_twin(fn, x, outs)
    if twin is not None:
        examples[0]["twin"] = twin
    meta = {"source": f"corpus-gen/programs_random/random_programs.py:{seed} ({wrap})",
            "check_jaxpr": verdict, "num_consts": len(consts), "symbolic": symbolic}
    if why:
        meta["check_jaxpr_error"] = why
    return text + "\n", meta, examples, nested


def f64_twin(fn, x, outs):
    """The program's value in double precision, computed once, for each floating output (None
    for the others): `fn` run by JAX with 64-bit types on, at its input widened to float64 where
    it is floating. The distance of XLA's own result from it measures how sensitive the program
    is to rounding; the tests take the larger of it and the dtype's bound as the tolerance of
    each element (an ill-conditioned program is judged fairly, a well-conditioned one at the
    dtype's bound). None where 64-bit types change the program's meaning, not only its
    precision: run with them at its own input, it must give XLA's outputs (integers exactly,
    floats within their bound), else (integer arithmetic that wraps in 32 bits, say) there is
    no twin."""
    leaves = jax.tree_util.tree_leaves
    try:
        with jax.enable_x64(True):
            same = [np.asarray(t) for t in leaves(jax.jit(fn)(x))]
            wide = x.astype(np.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x
            twin = [np.asarray(t) for t in leaves(jax.jit(fn)(wide))]
    except Exception:  # noqa: BLE001  (JAX refuses the widened program: no twin)
        return None
    if [t.shape for t in twin] != [np.shape(o) for o in outs] or \
            not all(_agrees(np.asarray(o), t) for o, t in zip(outs, same)):
        return None
    return [encode.array(t.astype(np.float64)) if jnp.issubdtype(np.asarray(o).dtype, jnp.floating)
            and jnp.issubdtype(t.dtype, jnp.floating) else None for o, t in zip(outs, twin)]


def _agrees(o, t):
    """Whether `t` (a run with 64-bit types on) gives XLA's output `o`: the same shape, integers
    and booleans exactly, floats within their dtype's bound."""
    if o.shape != t.shape:
        return False
    if not jnp.issubdtype(o.dtype, jnp.inexact):
        return bool(np.array_equal(o, t))
    rtol, atol = BOUNDS.get(str(o.dtype), (1e-11, 1e-12))
    o, t = np.asarray(o, np.float64), np.asarray(t, np.float64)
    return bool(np.allclose(t, o, rtol=rtol, atol=atol, equal_nan=True))


MUTANT_GROUP = "mutants"
DTYPE_SWAPS = {"float32": np.int32, "float16": np.float32, "bfloat16": np.float16, "int32": np.float32,
               "int8": np.uint8, "uint8": np.int8, "uint32": np.int32, "bool": np.int32}


def mutate(cj, seed):
    """One mutant of the closed jaxpr `cj`'s outermost equations (a result retyped, an operand
    replaced by another variable, or an equation dropped), and what was done; None when the
    program has no equation to mutate."""
    from jax._src import core
    r = pyrandom.Random(seed * 31 + 7)
    jaxpr = cj.jaxpr
    eqns = list(jaxpr.eqns)
    if not eqns:
        return None
    k = r.randrange(len(eqns))
    e = eqns[k]
    kind = r.choice(["retype", "retype", "operand", "drop"])
    # JAX prints `broadcast_in_dim` without its `shape` (the binder's type says it): a retyped
    # result prints as a valid program's text, which no checker of the text can tell apart.
    if kind == "retype" and e.outvars and hasattr(e.outvars[0].aval, "shape") \
            and e.primitive.name != "broadcast_in_dim":
        old = e.outvars[0]
        shape, dtype = list(old.aval.shape), old.aval.dtype
        how = r.choice(["dim", "rank", "dtype"])
        if how == "dim" and shape:
            shape[r.randrange(len(shape))] += r.choice([1, 2])
        elif how == "rank" or not shape:
            shape = shape[:-1] if shape and r.random() < 0.5 else shape + [r.choice([1, 2])]
        else:
            dtype = np.dtype(DTYPE_SWAPS.get(str(dtype), np.float32))
        new = core.Var(core.ShapedArray(tuple(shape), dtype))
        sub = lambda v: new if v is old else v  # noqa: E731
        eqns = [x.replace(invars=[sub(v) if isinstance(v, core.Var) else v for v in x.invars],
                          outvars=[sub(v) for v in x.outvars]) for x in eqns]
        outvars = [sub(v) if isinstance(v, core.Var) else v for v in jaxpr.outvars]
        what = f"retype result 0 of equation {k} ({e.primitive}) as {new.aval.str_short()}"
    # Operands of first-order equations only: JAX's typecheck of control flow does not compare
    # every nested binder with its operand (`while` accepts a body constant of another shape), so
    # check_jaxpr cannot judge such a mutant.
    elif kind == "operand" and any(isinstance(v, core.Var) for v in e.invars) \
            and not list(core.jaxprs_in_params(e.params)):
        scope = list(jaxpr.constvars) + list(jaxpr.invars) + [v for x in eqns[:k] for v in x.outvars]
        at = [i for i, v in enumerate(e.invars) if isinstance(v, core.Var)]
        i = r.choice(at)
        others = [v for v in scope if v is not e.invars[i] and hasattr(v.aval, "shape")]
        if not others:
            return None
        pick = r.choice(others)
        invars = list(e.invars)
        invars[i] = pick
        eqns[k] = e.replace(invars=invars)
        outvars = list(jaxpr.outvars)
        what = f"operand {i} of equation {k} ({e.primitive}) replaced by a {pick.aval.str_short()}"
    else:
        used = {id(v) for x in eqns[k + 1:] for v in x.invars} | {id(v) for v in jaxpr.outvars}
        if not any(id(v) in used for v in e.outvars):
            return None
        del eqns[k]
        outvars = list(jaxpr.outvars)
        what = f"equation {k} ({e.primitive}) dropped, its results still read"
    mutant = jaxpr.replace(eqns=eqns, outvars=outvars)
    return core.ClosedJaxpr(mutant, cj.consts), what


def write_mutants(seeds, out):
    """One mutant of each program of `seeds`, judged by `check_jaxpr`."""
    from jax._src import core
    gdir = os.path.join(out, MUTANT_GROUP)
    os.makedirs(gdir, exist_ok=True)
    manifest, skipped = {}, []
    start = time.time()
    for seed in seeds:
        name = f"m{seed}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn, x, _ = make(seed)
                made = mutate(jax.make_jaxpr(fn)(x), seed)
                if made is None:
                    continue
                mutant, what = made
                try:
                    core.check_jaxpr(mutant.jaxpr)
                    verdict, why = True, None
                except Exception as e:  # noqa: BLE001  (JAX's verdict is what is recorded)
                    verdict, why = False, f"{type(e).__name__}: {e}".splitlines()[0][:300]
                # What check_jaxpr accepts, JAX's lowering and XLA's compiler judge too: some
                # shape rules skip checks (`reshape`'s element count is a TODO in jax 0.10.2).
                compiles, compile_error = True, None
                if verdict:
                    try:
                        jax.jit(core.jaxpr_as_fun(mutant)).lower(x).compile()
                    except Exception as e:  # noqa: BLE001  (the run's verdict is recorded)
                        compiles = False
                        compile_error = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                text = str(mutant) + "\n"
        except Exception as e:  # noqa: BLE001  (not traceable or not printable: counted)
            skipped.append({"name": name, "reason": f"{type(e).__name__}: {e}".splitlines()[0][:300]})
            continue
        with open(os.path.join(gdir, name + ".jaxpr"), "w") as fh:
            fh.write(text)
        manifest[name] = {"source": f"corpus-gen/programs_random/random_programs.py:{seed}",
                          "mutation": what, "check_jaxpr": verdict}
        if why:
            manifest[name]["check_jaxpr_error"] = why
        if verdict:
            manifest[name]["compiles"] = compiles
        if compile_error:
            manifest[name]["compile_error"] = compile_error
    encode.write_column(gdir, f"jax {jax.__version__}", manifest, skipped, {})
    rejected = sum(not m["check_jaxpr"] for m in manifest.values())
    not_compiled = sum(m.get("compiles") is False for m in manifest.values())
    print(f"{len(manifest)} mutants: {rejected} rejected by check_jaxpr, {not_compiled} more that "
          f"JAX's lowering or XLA refuses, {len(skipped)} skipped, {time.time() - start:.0f} s")


def write(seeds, out):
    gdir = os.path.join(out, GROUP)
    os.makedirs(gdir, exist_ok=True)
    manifest, values, skipped = {}, {}, []
    start = time.time()
    for seed in seeds:
        name = f"r{seed}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                text, meta, examples, nested = record(seed)
        except Exception as e:  # noqa: BLE001  (JAX refuses the program: counted, not judged)
            skipped.append({"name": name, "reason": f"{type(e).__name__}: {e}".splitlines()[0][:300]})
            continue
        with open(os.path.join(gdir, name + ".jaxpr"), "w") as fh:
            fh.write(text)
        if nested:
            recorded.write(os.path.join(gdir, name + ".recorded.json"), (nested, {}, None, {}))
        manifest[name] = meta
        values[name] = examples
        if seed % 200 == 0:
            jax.clear_caches()
    encode.write_column(gdir, f"jax {jax.__version__}", manifest, skipped, values)
    print(f"{len(seeds)} programs: {len(manifest)} written "
          f"({sum(not m['check_jaxpr'] for m in manifest.values())} rejected by check_jaxpr), "
          f"{len(skipped)} JAX could not trace, {time.time() - start:.0f} s")


# The tests' bound per dtype (rtol, atol): crates/jaxpr-build/tests/native/abi.rs, `tolerance`.
BOUNDS = {"bfloat16": (2e-2, 2e-2), "float16": (4e-3, 4e-3), "float32": (2e-5, 1e-5)}


def sensitivity(out):
    """`sensitivity DIR`: how far XLA's own results lie from the programs' double-precision
    twins, against the dtype's bound: the programs where some element is farther than its
    bound (ill-conditioned, where the twin widens the tolerance) and the largest ratio."""
    import gzip
    with gzip.open(os.path.join(out, GROUP, "values.json.gz")) as fh:
        values = json.load(fh)
    with_twin = beyond = 0
    worst = (0.0, None)
    for name, examples in sorted(values.items()):
        ex = examples[0]
        if "twin" not in ex:
            continue
        with_twin += 1
        far = False
        for o, t in zip(ex["outputs"], ex["twin"]):
            if t is None or o["dtype"] not in BOUNDS:
                continue
            rtol, atol = BOUNDS[o["dtype"]]
            e = np.asarray([float(x) for x in o["data"]], np.float64)
            w = np.asarray([float(x) for x in t["data"]], np.float64)
            ok = np.isfinite(e) & np.isfinite(w)
            ratio = np.abs(e - w)[ok] / (atol + rtol * np.abs(e[ok])) if ok.any() else np.zeros(0)
            if ratio.size and ratio.max() > 1:
                far = True
                if ratio.max() > worst[0]:
                    worst = (float(ratio.max()), name)
        beyond += far
    print(f"{len(values)} programs, {with_twin} with a double-precision twin; {beyond} with an element "
          f"whose XLA value is farther from the twin than its dtype's bound (largest: {worst[0]:.1f}x "
          f"the bound, {worst[1]})")


def main():
    if sys.argv[1] == "sensitivity":
        sensitivity(sys.argv[2])
        return
    cmd, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    seeds = list(range(RUN_BASE, RUN_BASE + n)) if cmd == "run" else \
        list(range(SAMPLE_BASE, SAMPLE_BASE + n)) + FOUND + SYMBOLIC
    write(seeds, out)
    write_mutants(seeds, out)


if __name__ == "__main__":
    main()
