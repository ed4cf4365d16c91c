"""The Python API on live functions, run by tests/wheel.rs with the installed
wheel importable and jax 0.10.2, pandas and pytest (tests/trace/venv.sh
wheel-api):

    python live.py commands ROOT       # check/types/stats/graph/diff/build on functions, rule options
    python live.py native ROOT         # native builds called from Python against jax.jit
    python live.py pytest ROOT         # the pytest plugin on tests/wheel/plugin_tests.py
    python live.py typed ROOT          # mypy reads the installed package's annotations (py.typed)

ROOT is the checkout (its corpus-gen and tests/data), CORPUS the shared corpus
is `ROOT/../shared/corpus` unless JAXPR_CORPUS says otherwise.
"""

import gzip
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxpr


def corpus(root: Path) -> Path:
    return Path(os.environ.get("JAXPR_CORPUS", root.parent / "shared/corpus"))


def corpus_programs(root: Path):
    """(name, function, example arguments) of the shared corpus's JAX
    programs and of the ecosystem corpus's jax.numpy group (the groups of
    other libraries need those libraries), at their example shapes."""
    sys.path[:0] = [str(corpus(root) / "jax"), str(root / "corpus-gen"), str(root / "corpus-gen/ecosystem")]
    import programs_jax
    import programs_jax_numpy

    out = []
    for name, (fn, examples, opts) in programs_jax.PROGRAMS.items():
        if not opts.get("symbolic"):
            out.append((f"jax/{name}", fn, tuple(examples[0])))
    for p in programs_jax_numpy.programs():
        out.append((f"ecosystem/jax_numpy/{p.name}", p.fn, tuple(p.args)))
    return out


def raises(kind, text, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as e:
        assert text in str(e), f"{kind.__name__} without {text!r}: {e}"
        return e
    raise AssertionError(f"{fn.__name__}{args!r} raised no {kind.__name__}")


def reuses_a_key(k):
    a = jax.random.normal(k, (3,))
    b = jax.random.normal(k, (3,))  # the reuse
    return a + b


def commands(root: Path):
    key = jax.random.key(0)
    checked = 0
    for name, fn, args in corpus_programs(root):
        report = jaxpr.check(fn, *args)
        assert not report.errors, f"{name}: {report}"
        sigs = jaxpr.types(fn, *args)
        assert sigs[0].what == "main jaxpr" and sigs[0].in_type.startswith("(("), (name, sigs[0])
        checked += 1
    assert checked >= 30, checked

    # Diagnostics: code, severity, range, related locations, help, the user's line, the CLI's rendering.
    report = jaxpr.check(reuses_a_key, key)
    assert [(d.code, d.kind, d.severity) for d in report] == [("J0013", "key-reuse", "warning")], report
    d = report[0]
    lines, first = inspect.getsourcelines(reuses_a_key)
    reuse_line = first + next(i for i, l in enumerate(lines) if "the reuse" in l)
    assert d.python is not None and d.python.line == reuse_line and d.python.function == "reuses_a_key", d.python
    assert Path(d.python.file).resolve() == Path(__file__).resolve(), d.python
    assert d.related and d.related[0].range.line < d.line and "consumed" in d.related[0].message, d.related
    assert d.help and "split" in d.help, d.help
    assert d.rendered.startswith("warning[J0013]") and "reuses_a_key.jaxpr:" in d.rendered and "^" in d.rendered, d.rendered
    assert "/tmp" not in d.rendered and "jaxpr-" not in d.rendered.split("\n")[1], d.rendered
    assert "checked 1 file: 0 errors, 1 warning" in str(report), str(report)
    assert "<pre" in report._repr_html_() and "J0013" in report._repr_html_()

    # Printed with name stacks (`# [jvp(dense)]` under the source comment, which the graph
    # groups by): every line of an equation, its name stack's and its parameters' too, still
    # gives the equation's Python line.
    def scoped(w):
        with jax.named_scope("dense"):
            return jnp.sum(jnp.tanh(w @ w) ** 2)

    prog = jaxpr.trace(jax.grad(scoped), jnp.ones((3, 3)))
    assert "# [jvp(dense)]" in prog.text and "# [transpose(jvp(dense))]" in prog.text, prog.text
    text_lines = prog.text.split("\n")
    starts = [i for i, l in enumerate(text_lines, 1) if " = " in l.split("#")[0] and "scoped)" in l]
    assert len(starts) >= 5, prog.text
    for start in starts:
        where = prog.python_location(start)
        assert where is not None and where.function.endswith("scoped"), (start, where)
        for later in range(start + 1, len(text_lines) + 1):
            code = text_lines[later - 1].split("#")[0]
            if " = " in code or "in (" in code:
                break
            assert prog.python_location(later) == where, (later, text_lines[later - 1], where)

    # Rule options, as the CLI's flags, and configuration files.
    assert len(jaxpr.check(reuses_a_key, key, ignore="J0013")) == 0
    assert len(jaxpr.check(reuses_a_key, key, select=["shape-mismatch"])) == 0
    assert jaxpr.check(reuses_a_key, key, error=["key-reuse"])[0].severity == "error"
    raises(jaxpr.JaxprError, "key-reuze", jaxpr.check, reuses_a_key, key, ignore=["key-reuze"])
    with tempfile.TemporaryDirectory() as d:
        project = Path(d)
        (project / "jaxpr.toml").write_text('ignore = ["key-reuse"]\n')
        assert len(jaxpr.check(reuses_a_key, key, config=project / "jaxpr.toml")) == 0
        # Found above the function's own file, as the CLI finds it above a checked file.
        (project / "jaxpr.toml").unlink()
        (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.jaxpr]\nerror = ["key-reuse"]\n')
        (project / "pkg").mkdir()
        (project / "pkg/model.py").write_text(textwrap.dedent(inspect.getsource(reuses_a_key)).replace("def reuses_a_key", "import jax\ndef reuses_a_key"))
        sys.path.insert(0, str(project / "pkg"))
        import model

        assert jaxpr.check(model.reuses_a_key, key)[0].severity == "error"
        assert jaxpr.check(model.reuses_a_key, key, config=False)[0].severity == "warning"
        (project / "pyproject.toml").write_text('[tool.jaxpr]\nignore = ["key-reuze"]\n')
        raises(jaxpr.JaxprError, "pyproject.toml", jaxpr.check, model.reuses_a_key, key)
        # A function whose file has no configuration above it (a notebook
        # cell's, compiled into a temporary folder): the working directory's.
        (project / "pyproject.toml").write_text('[tool.jaxpr]\nignore = ["key-reuse"]\n')
        cell = {}
        exec(compile(inspect.getsource(reuses_a_key), "/nonexistent/ipykernel_1/cell.py", "exec"), {"jax": jax}, cell)
        assert len(jaxpr.check(cell["reuses_a_key"], key)) == 1
        here = os.getcwd()
        os.chdir(project)
        try:
            assert len(jaxpr.check(cell["reuses_a_key"], key)) == 0
        finally:
            os.chdir(here)

    # What JAX holds besides functions: a ClosedJaxpr, a Traced; a Lowered is refused with what to pass.
    def mlp(x, w):
        return jnp.tanh(x @ w).sum(axis=0)

    x, w = jnp.ones((4, 3)), jnp.ones((3, 5))
    assert str(jaxpr.check(jax.make_jaxpr(mlp)(x, w))) == str(jaxpr.check(mlp, x, w))
    traced = jax.jit(mlp).trace(x, w)
    assert jaxpr.types(traced) == jaxpr.types(mlp, x, w)
    raises(jaxpr.JaxprError, "jax.stages.Traced", jaxpr.check, traced.lower())
    raises(jaxpr.JaxprError, "expected a jax ClosedJaxpr", jaxpr.stats, 42)
    raises(jaxpr.JaxprError, "tracing mlp failed", jaxpr.check, mlp, x, jnp.ones((4, 4)))

    # stats: totals as the CLI's JSON, a dict, DataFrames, a table.
    s = jaxpr.stats(mlp, x, w)
    assert s.flops == 2 * 4 * 3 * 5 + 3 * 5, s.flops  # dot_general's multiply-adds, the column sums' adds
    assert s.total.transcendentals == 20 and s.by_primitive == {"dot_general": 1, "tanh": 1, "reduce_sum": 1}, s.to_dict()
    assert s.to_dict()["total"]["flops"] == s.flops
    frame = s.to_dataframe()
    assert list(frame["jaxpr"]) == ["main"] and int(frame["flops"][0]) == s.flops, frame
    assert frame["peak_python"][0].startswith(str(Path(__file__).resolve())), frame["peak_python"][0]
    by_line = s.to_dataframe(by="python_line")
    assert len(by_line) == 1 and by_line["source"][0].startswith(str(Path(__file__).resolve())), by_line
    assert "mlp.jaxpr: 3 equations" in s.table, s.table
    assert "<table" in s._repr_html_()

    g = jaxpr.graph(mlp, x, w)
    assert g.html.lstrip().lower().startswith("<!doctype html") and "dot_general" in g.html, g.html[:200]
    assert "srcdoc=" in g._repr_html_()

    def mlp_sin(x, w):
        return jnp.sin(x @ w).sum(axis=0)

    same = jaxpr.diff(mlp, mlp, x, w)
    assert same.equal and not same, same
    changed = jaxpr.diff(mlp, mlp_sin, x, w)
    kinds = sorted(c["kind"] for c in changed.changes)
    assert not changed.equal and {"added", "removed"} <= set(kinds), kinds
    assert "mlp.jaxpr (A)" in changed.text and "mlp_sin.jaxpr (B)" in changed.text, changed.text
    assert "jaxpr diff" in changed._repr_html_()

    hlo = jaxpr.build(mlp, x, w, emit="stablehlo")
    assert "stablehlo.dot_general" in hlo.text and "tensor<4x3xf32>" in hlo.text, hlo.text[:300]
    raises(ValueError, "emit must be", jaxpr.build, mlp, x, w, emit="wasm")
    print(f"commands: {checked} corpus programs checked and typed")


# The corpus's tolerances (crates/jaxpr-build/tests/jax_suite.rs, `tolerance`).
TOLERANCE = {"bfloat16": (2e-2, 2e-2), "float16": (4e-3, 4e-3), "float32": (2e-5, 1e-5), "float64": (1e-11, 1e-12),
             "complex64": (2e-5, 1e-5), "complex128": (1e-11, 1e-12)}


def close(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    rtol, atol = TOLERANCE.get(want.dtype.name, (0.0, 0.0))
    if rtol == 0.0:
        return bool(np.array_equal(got, want))
    g, w = got.astype(np.complex128 if "complex" in want.dtype.name else np.float64), want.astype(
        np.complex128 if "complex" in want.dtype.name else np.float64)
    return bool(np.all((np.abs(g - w) <= atol + rtol * np.abs(w)) | (np.isnan(g) & np.isnan(w)) | (g == w)))


def decode(value):
    dtype = value["dtype"]
    data = value["data"]
    if "complex" in dtype:
        flat = [complex(float(re), float(im)) for re, im in data]
    else:
        flat = [float(v) if isinstance(v, str) else v for v in data]
    if dtype == "bfloat16":
        import ml_dtypes

        return np.asarray(flat, np.float32).astype(ml_dtypes.bfloat16).reshape(value["shape"])
    return np.asarray(flat, dtype=dtype).reshape(value["shape"])


# Stored programs of the ecosystem corpus whose libraries are not installed
# here: built from their text, called with the inputs JAX ran them on.
STORED = ["blackjax/rmh_step", "distrax/mixture_log_prob", "equinox/gru_scan", "flax_linen/mlp_trainstate_step",
          "haiku/lstm_dynamic_unroll", "optax/adam_step", "jax_md/lennard_jones_forces", "tfp/mvn_tril_log_prob",
          # Nested jaxprs' constants, their values recorded beside the text.
          "jax_md/nve_step", "jax_md/soft_sphere_energy"]


def native(root: Path):
    built, refused = [], []
    for name, fn, args in corpus_programs(root):
        want = jax.jit(fn)(*args)
        try:
            f = jaxpr.build(fn, *args)
        except jaxpr.BuildError as e:
            refused.append(f"{name}: {str(e).splitlines()[1] if len(str(e).splitlines()) > 1 else e}")
            continue
        got = f(*args)  # the example arguments: numpy arrays and JAX arrays
        # JAX arrays given (read through DLPack): JAX arrays back, as jax.jit.
        kind = jax.Array if any(isinstance(a, jax.Array) for a in jax.tree_util.tree_leaves(args)) \
            else np.ndarray
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want), (name, got, want)
        for i, (g, w) in enumerate(zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want))):
            if jnp.issubdtype(w.dtype, jax.dtypes.prng_key):
                g, w = jax.random.key_data(g), jax.random.key_data(w)
            else:
                assert isinstance(g, kind), (name, type(g), kind)
            w = np.asarray(w)
            assert close(g, w), f"{name}: output {i} differs from jax.jit's:\n{g}\n{w}"
        built.append(name)
    print(f"native: {len(built)} live programs equal to jax.jit's values, {len(refused)} refused:")
    for r in refused:
        print(f"  refused {r}")
    # Refusals are the native back end's documented gaps (J0012: complex FFTs,
    # LAPACK's eigenvector and singular-vector signs), never another error.
    assert len(built) >= 29 and all("error[J0012]" in r for r in refused), (len(built), refused)

    ecosystem = root / "tests/data/ecosystem"
    for name in STORED:
        group, program = name.split("/")
        manifest = json.loads((ecosystem / group / "manifest.json").read_text())["programs"][program]
        values = json.loads(gzip.decompress((ecosystem / group / "values.json.gz").read_bytes()))[program][0]
        jax.config.update("jax_threefry_partitionable", bool(manifest.get("threefry_partitionable", True)))
        recorded = ecosystem / group / f"{program}.recorded.json"
        constants = json.loads(recorded.read_text())["constants"] if recorded.exists() else {}
        text = (ecosystem / group / f"{program}.jaxpr").read_text()
        f = jaxpr.build(jaxpr.Program(program, text, constants=constants))
        got = f(*[decode(v) for v in values["inputs"]])
        got = list(got) if isinstance(got, tuple) else [got]
        want = [decode(v) for v in values["outputs"]]
        assert len(got) == len(want), (name, len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            assert close(g, w), f"{name}: output {i} differs from JAX's:\n{g}\n{w}"
    jax.config.update("jax_threefry_partitionable", True)
    print(f"native: {len(STORED)} stored ecosystem programs equal to JAX's recorded values")

    # Input checks: a clear Python error, never a crash; the library's own checks behind them.
    def affine(x, w, b):
        return {"y": x @ w + b, "n": jnp.sum(x > 0)}

    x, w, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.zeros(4, np.float32)
    f = jaxpr.build(affine, x, w, b)
    out = f(jnp.asarray(x), w, b)
    assert set(out) == {"y", "n"} and out["y"].shape == (2, 4) and int(out["n"]) == 6, out
    raises(ValueError, "input 0 must have shape (2, 3), got (3, 2)", f, np.ones((3, 2), np.float32), w, b)
    raises(TypeError, "input 1 must be float32[3, 4], got float64[3, 4]", f, x, np.ones((3, 4)), b)
    raises(TypeError, "structure", f, x, w)
    raises(TypeError, "dtype object", f, x, w, np.array([object()] * 4))
    text_f = jaxpr.build(jaxpr.Program("affine", jaxpr.trace(affine, x, w, b).text))
    raises(jaxpr.NativeCallError, "", text_f, np.ones((3, 2), np.float32), w, b)
    raises(TypeError, "takes 3 arrays, got 2", text_f, x, w)
    assert "affine" in text_f.header and "jx_array" in text_f.header

    # PRNG keys in and out: keys come back as keys, as jax.jit returns them.
    def split_step(k):
        k1, k2 = jax.random.split(k)
        return k1, jax.random.normal(k2, (2,))

    key = jax.random.key(3)
    got_key, got_x = jaxpr.build(split_step, key)(key)
    want_key, want_x = jax.jit(split_step)(key)
    assert jax.dtypes.issubdtype(got_key.dtype, jax.dtypes.prng_key), got_key
    assert np.array_equal(jax.random.key_data(got_key), jax.random.key_data(want_key)) and close(got_x, want_x)

    # A refusal carries the diagnostics that stop the build.
    bad = (corpus(root) / "invalid/broadcast_dims.jaxpr").read_text()
    e = raises(jaxpr.BuildError, "J0004", jaxpr.build, jaxpr.Program("bad", bad))
    assert [d.code for d in e.diagnostics if d.severity == "error"] == ["J0004"], e.diagnostics
    closed_constants()


# Closed over by a jitted function: JAX prints them as the nested jaxpr's
# constants, by name only (`let inner = { lambda a:bool[1,3] b:f32[3]; ...`).
SCALE = jnp.arange(3.0, dtype=jnp.float32) + 0.5
MASK = jnp.array([[True, False, True]])


@jax.jit
def inner(x):
    return jnp.where(MASK[0], x * SCALE, -x)


def outer(x):
    return jnp.sin(inner(x)) + inner(x * 2)


def closed_constants():
    """A nested jaxpr's constants travel with the program: recorded when it
    is traced, built into it, with jax.jit's values; the text alone is
    refused, saying what it lacks."""
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    prog = jaxpr.trace(outer, x)
    assert sorted(v["dtype"] for v in prog.constants.values() if v["nested"]) == ["bool", "float32"], prog.constants
    want = np.asarray(jax.jit(outer)(x))
    got = jaxpr.build(outer, x)(x)
    assert close(got, want), f"native: {got} differs from jax.jit's {want}"
    module = jaxpr.build(outer, x, emit="stablehlo").text
    assert "stablehlo.constant" in module and "tensor<3xf32>" in module, module
    e = raises(jaxpr.BuildError, "no values in the text", jaxpr.build, jaxpr.Program("outer", prog.text))
    assert e.diagnostics and e.diagnostics[0].code == "J0012", e.diagnostics
    # From a session: `jaxpr trace` records them beside the function's text,
    # and a build of that text with them gives jax.jit's values.
    from jaxpr._cli import binary

    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "closed_constants.py"
        shutil.copy(Path(__file__).parents[1] / "trace/closed_constants.py", script)
        done = subprocess.run([binary(), "trace", "--", sys.executable, str(script)], cwd=d,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        printed = np.asarray(json.loads(done.stdout.strip().splitlines()[-1]), np.float32)
        session = Path(d) / ".jaxpr-session"
        recorded = json.loads((session / "outer.recorded.json").read_text())["constants"]
        f = jaxpr.build(jaxpr.Program("outer", (session / "outer.jaxpr").read_text(), constants=recorded))
        got = f(np.linspace(-1, 1, 3, dtype=np.float32))
        assert close(got, printed), f"from the session: {got} differs from jax.jit's {printed}"
    print("native: a nested jaxpr's constants built with jax.jit's values, live and from a session "
          "(the text alone refused)")
    library_solve()


def library_solve():
    """lineax's `linear_solve` prints its operator and solver as Python
    objects (the matrix an operator closes over as a constant inside them,
    by name only): the trace records what equinox lowers it as, its
    implementation at the equation's operands, and the native build of it
    gives jax.jit's values, as a drop-in for the jitted function."""
    import lineax as lx

    def solve(m, b):
        operator = lx.FunctionLinearOperator(lambda x: m @ x + 0.5 * x,
                                             jax.ShapeDtypeStruct((4,), jnp.float32))
        return lx.linear_solve(operator, b, lx.LU()).value

    rng = np.random.default_rng(7)
    m = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    prog = jaxpr.trace(solve, m, b)
    assert [v["primitive"] for v in prog.implementations.values()] == ["linear_solve"], prog.implementations
    f = jaxpr.build(solve, m, b)
    for k in range(3):
        m_k, b_k = m + k * np.eye(4, dtype=np.float32), b * (k + 1)
        got, want = f(m_k, b_k), np.asarray(jax.jit(solve)(m_k, b_k))
        assert isinstance(got, np.ndarray), type(got)
        assert close(got, want), f"native lineax solve: {got} differs from jax.jit's {want}"
        # JAX arrays in (through DLPack) and out, as jax.jit takes and gives them.
        got_jax = f(jnp.asarray(m_k), jnp.asarray(b_k))
        assert isinstance(got_jax, jax.Array), type(got_jax)
        assert close(np.asarray(got_jax), want), f"native lineax solve on JAX arrays: {got_jax} vs {want}"
    e = raises(jaxpr.BuildError, "linear_solve", jaxpr.build, jaxpr.Program("solve", prog.text))
    assert e.diagnostics and e.diagnostics[0].code == "J0012", e.diagnostics
    print("native: lineax's linear_solve built from its recorded implementation with jax.jit's values "
          "(the text alone refused)")
    pallas_blocks()


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + 2.0 * y_ref[...]


def add_reversed(x, y):
    """A kernel over a grid of 4 whose output blocks go in reverse order:
    jax 0.10.2 prints its `BlockMapping`s without their index maps."""
    from jax.experimental import pallas as pl

    spec = pl.BlockSpec((2,), lambda i: (i,))
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(4,),
                          in_specs=[spec, spec], out_specs=pl.BlockSpec((2,), lambda i: (3 - i,)),
                          interpret=True)(x, y)


def pallas_blocks():
    """A Pallas kernel's blocks travel with the program: its index maps,
    evaluated by JAX at every grid point when it is traced, are built with
    jax.jit's values; the text alone is refused, saying what it lacks."""
    x, y = np.arange(8, dtype=np.float32), np.linspace(0, 1, 8, dtype=np.float32)
    prog = jaxpr.trace(add_reversed, x, y)
    [kernel] = prog.kernels.values()
    assert kernel["grid"] == [4] and kernel["blocks"][0] == [[0], [0], [3]], kernel
    want = np.asarray(jax.jit(add_reversed)(x, y))
    got = jaxpr.build(add_reversed, x, y)(x, y)
    assert close(got, want), f"native: {got} differs from jax.jit's {want}"
    assert "stablehlo" in jaxpr.build(add_reversed, x, y, emit="stablehlo").text
    raises(jaxpr.BuildError, "does not print its index map", jaxpr.build, jaxpr.Program("add_reversed", prog.text))
    print("native: a Pallas kernel's recorded blocks built with jax.jit's values (the text alone refused)")
    pallas_strides()


def every_other_row(x):
    """A kernel reading every other row (`pl.ds(1, 4, stride=2)`), which
    JAX prints as `1:1+4`."""
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(1, 4, stride=2), :] * 2.0

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4, x.shape[1]), x.dtype), interpret=True)(x)


def pallas_strides():
    """A slice's stride, which JAX does not print, travels with the program:
    recorded by name of the load's result, built with jax.jit's values; the
    text alone is refused, saying what it lacks."""
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    prog = jaxpr.trace(every_other_row, x)
    assert [a["strides"] for a in prog.accesses or []] == [[[2, 1]]], prog.accesses
    want = np.asarray(jax.jit(every_other_row)(x))
    got = jaxpr.build(every_other_row, x)(x)
    assert close(got, want), f"native: {got} differs from jax.jit's {want}"
    raises(jaxpr.BuildError, "JAX prints no stride", jaxpr.build, jaxpr.Program("every_other_row", prog.text))
    print("native: a strided Pallas load's recorded strides built with jax.jit's values (the text alone refused)")


def pytest_plugin(root: Path):
    with tempfile.TemporaryDirectory() as d:
        xml = Path(d) / "report.xml"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={xml}",
             str(root / "tests/wheel/plugin_tests.py")],
            capture_output=True, text=True, timeout=1200, cwd=d,
            env={**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
        )
        out = done.stdout + done.stderr
        assert "\njaxpr: jaxpr " in out, out  # the plugin's header line: it was loaded
        import xml.etree.ElementTree as ET

        cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase")}
        assert len(cases) >= 8, (sorted(cases), out)
        for name, case in cases.items():
            failure = case.find("failure")
            if name.startswith("test_fails_"):
                assert failure is not None, f"{name} passed:\n{out}"
                expected = {
                    "test_fails_key_reuse": ["warning[J0013]", "reuses a PRNG key", "^"],
                    "test_fails_over_budget": ["over budget", "FLOPs: ", "dot_general"],
                    "test_fails_wrong_collectives": ["collectives per device per call {'psum_invariant': 1}",
                                                     "expected {'all_gather': 1}"],
                    "test_fails_collectives_in_a_while_loop": ["run a number of times the program does not fix",
                                                               "inside a `while` loop"],
                    "test_fails_marker_makes_an_error": ["error[J0013]", "jaxpr check found 1 problem"],
                }[name]
                for text in expected:
                    assert text in failure.get("message", "") + (failure.text or ""), (name, text, failure.text)
            else:
                assert failure is None and case.find("error") is None, f"{name} failed:\n{out}"
    print(f"pytest: {len(cases)} plugin tests ran as expected")


# A user's code: right, and with one mistake mypy can only see through the
# package's own annotations (stats' flops is an int).
TYPED_USER = """
import jax.numpy as jnp
import jaxpr

def f(x: jnp.ndarray) -> jnp.ndarray:
    return x * 2

report: jaxpr.Report = jaxpr.check(f, jnp.ones(3), ignore=["J0010"])
lines: list[int] = [d.line for d in report.errors]
where = [d.python.line for d in report if d.python is not None]
native = jaxpr.build(f, jnp.ones(3))
doubled = native(jnp.ones(3))
module: str = jaxpr.build(f, jnp.ones(3), emit="stablehlo").text
flops: int = jaxpr.stats(f, jnp.ones(3)).flops
"""


def typed(root: Path):
    import jaxpr as package

    marker = Path(package.__file__).parent / "py.typed"
    assert marker.is_file(), f"{marker} is not installed"
    with tempfile.TemporaryDirectory() as d:
        good = Path(d) / "good.py"
        good.write_text(TYPED_USER)
        bad = Path(d) / "bad.py"
        bad.write_text(TYPED_USER + "wrong: str = jaxpr.stats(f, jnp.ones(3)).flops\n")
        mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(Path(d) / "cache")]
        done = subprocess.run(mypy + [str(good)], capture_output=True, text=True, timeout=600, cwd=d)
        assert done.returncode == 0, done.stdout + done.stderr
        done = subprocess.run(mypy + [str(bad)], capture_output=True, text=True, timeout=600, cwd=d)
        said = done.stdout + done.stderr
        assert done.returncode == 1 and 'expression has type "int", variable has type "str"' in said, said
        # The package itself passes --strict as installed.
        done = subprocess.run(mypy + ["-p", "jaxpr"], capture_output=True, text=True, timeout=600, cwd=d)
        assert done.returncode == 0, done.stdout + done.stderr
    print("typed: mypy --strict reads the installed annotations")


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    {"commands": commands, "native": native, "pytest": pytest_plugin, "typed": typed}[mode](root)
    print(f"live {mode}: ok")
