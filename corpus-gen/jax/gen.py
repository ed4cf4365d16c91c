"""Writes the jax-suite corpus: the programs of JAX's own test suite, printed.

usage: python gen.py JAX_GIT_DIR OUT_DIR [GROUP ...]

JAX_GIT_DIR is a clone (or bare git dir) of github.com/jax-ml/jax; the test files
are read from its tag `jax-v0.10.2` and imported, so their parameter tables (ops,
dtypes, shapes, harnesses) drive the programs written here.  GROUPs default to all
of: lax, numpy, control_flow, autodiff, random, shape_poly.

For each program OUT_DIR/GROUP/NAME.jaxpr holds the printed jaxpr, and
OUT_DIR/GROUP/manifest.json and OUT_DIR/GROUP/values.json.gz record its
provenance, JAX's own verdict (`check_jaxpr`) and the values it computes.
"""
import gzip, importlib, json, os, re, signal, subprocess, sys, tempfile, time
import numpy as np

# The encoder both corpus generators share (they run in different venvs).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import encode  # noqa: E402

TAG = "jax-v0.10.2"
TEST_FILES = ["lax_test", "lax_numpy_test", "lax_numpy_operators_test",
              "lax_control_flow_test", "lax_autodiff_test", "random_test",
              "shape_poly_test"]
GROUPS = ["lax", "numpy", "control_flow", "autodiff", "random", "shape_poly"]
# Values of programs with more elements than this are not stored (the jaxpr is).
MAX_ELEMENTS = 512
TIMEOUT_S = 60


def import_test_files(git_dir):
    tmp = tempfile.mkdtemp(prefix="jax-tests-")
    for f in TEST_FILES:
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{TAG}:tests/{f}.py"],
                              check=True, capture_output=True, text=True).stdout
        with open(os.path.join(tmp, f + ".py"), "w") as fh:
            fh.write(text)
    sys.path.insert(0, tmp)
    return {f: importlib.import_module(f) for f in TEST_FILES}


def enc(x):
    """A value as the corpus writes it; a PRNG key as `key<impl>` with its key data."""
    import jax
    if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
        impl = str(jax.random.key_impl(x))
        return {"dtype": f"key<{impl}>", "shape": list(x.shape),
                "data": [int(v) for v in np.asarray(jax.random.key_data(x)).reshape(-1)]}
    return encode.array(x)


def safe_name(name, taken):
    base = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name).strip("_")[:110] or "program"
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}.{k}"
    taken.add(out)
    return out


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


class Program:
    """One program: `fn` applied to `args` (a list of pytrees of arrays).

    `poly`, when given, are the `jax.export` symbolic shape specs, one per argument;
    the program is then printed traced at those symbolic shapes (and must export),
    and its values are computed at the concrete `args`.
    """
    def __init__(self, name, fn, args, source, poly=None, constraints=(), flags=None):
        self.name, self.fn, self.args, self.source = name, fn, list(args), source
        self.poly, self.constraints, self.flags = poly, tuple(constraints), flags or {}


def record(prog):
    import jax
    from jax import export
    from jax._src import core
    if prog.poly is not None:
        specs = export.symbolic_args_specs(prog.args, prog.poly, constraints=prog.constraints)
        cj = jax.make_jaxpr(prog.fn)(*specs)
        export.export(jax.jit(prog.fn))(*specs)
        concrete = jax.make_jaxpr(prog.fn)(*prog.args)
    else:
        cj = concrete = jax.make_jaxpr(prog.fn)(*prog.args)
    try:
        core.check_jaxpr(cj.jaxpr)
        verdict, why = True, None
    except Exception as e:  # JAX rejects its own program: recorded, not a failure here
        verdict, why = False, f"{type(e).__name__}: {e}"[:400]
    leaves = jax.tree_util.tree_leaves(prog.args)
    consts = list(cj.consts)
    size = sum(np.size(v) for v in consts + leaves) + sum(
        int(np.prod(a.shape)) for a in concrete.out_avals)
    examples = None
    if size <= MAX_ELEMENTS:
        outs = core.eval_jaxpr(concrete.jaxpr, concrete.consts, *leaves)
        examples = [{"inputs": [enc(c) for c in consts] + [enc(a) for a in leaves],
                     "outputs": [enc(o) for o in outs]}]
    meta = {"source": prog.source, "check_jaxpr": verdict, "num_consts": len(consts),
            "symbolic": list(prog.poly) if prog.poly is not None else None,
            "constraints": list(prog.constraints) or None}
    if why:
        meta["check_jaxpr_error"] = why
    return str(cj) + "\n", meta, examples


def run_group(group, programs, out):
    import jax
    from jax._src import test_util as jtu
    gdir = os.path.join(out, group)
    os.makedirs(gdir, exist_ok=True)
    for f in os.listdir(gdir):
        os.remove(os.path.join(gdir, f))
    manifest, values, taken, skipped = {}, {}, set(), []
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.time()
    for prog in programs:
        signal.alarm(TIMEOUT_S)
        try:
            if prog.flags:
                with jtu.global_config_context(**prog.flags):
                    text, meta, ex = record(prog)
            else:
                text, meta, ex = record(prog)
        except Exception as e:  # not traceable here (or too slow): left out, and said so
            skipped.append({"name": prog.name, "source": prog.source,
                            "reason": f"{type(e).__name__}: {e}"[:300]})
            continue
        finally:
            signal.alarm(0)
        name = safe_name(prog.name, taken)
        with open(os.path.join(gdir, name + ".jaxpr"), "w") as fh:
            fh.write(text)
        manifest[name] = meta
        if ex is not None:
            values[name] = ex
    with open(os.path.join(gdir, "manifest.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "programs": manifest,
                   "skipped": skipped}, fh, indent=1, sort_keys=True)
    with gzip.open(os.path.join(gdir, "values.json.gz"), "wt") as fh:
        json.dump(values, fh, separators=(",", ":"), sort_keys=True)
    print(f"{group}: {len(manifest)} programs ({sum(not m['check_jaxpr'] for m in manifest.values())}"
          f" rejected by check_jaxpr), {len(skipped)} skipped, {time.time() - t0:.0f}s", flush=True)


def main():
    git_dir, out = sys.argv[1], sys.argv[2]
    groups = sys.argv[3:] or GROUPS
    mods = import_test_files(git_dir)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for group in groups:
        module = importlib.import_module(f"programs_{group}")
        run_group(group, list(module.programs(mods)), out)


if __name__ == "__main__":
    main()
