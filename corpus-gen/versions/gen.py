"""Writes one JAX column of the version matrix: the same program set printed by
the JAX that runs this script, with the values that JAX computes.

usage: python gen.py OUT_DIR [SHARED_CORPUS_JAX_DIR]

The program set is made of other generators' programs, imported, not copied:
- `corpus` : the shared corpus's models (`shared/corpus/jax/programs_jax.py`,
  SHARED_CORPUS_JAX_DIR, default `../shared/corpus/jax` beside the checkout),
  its `build` option kept;
- `builds` : corpus-gen/builds/programs.py (all in the build set);
- `held_out`: corpus-gen/versions/programs.py (JAX test programs once judged
  more strictly than JAX judges them).
A program this JAX cannot express is left out for it (listed under `skipped`).

Writes OUT_DIR/jax-VERSION/: NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`, at
the symbolic shapes for shape-polymorphic programs), manifest.json and
values.json.gz in the format of tests/data/jax-suite (corpus-gen/jax/README.md)
plus `build` per program; values (64-bit types off, `jax.jit(f)(*args)`) only
for programs in the build set.
"""
import os, sys
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.dirname(HERE)
sys.path.insert(0, GEN)
import encode  # noqa: E402
from folder import load  # noqa: E402


def program_set(shared_dir):
    """(group, name, fn, args, source, poly, build, constraints) for every program this JAX has."""
    out = []
    shared = load(os.path.join(shared_dir, "programs_jax.py"), "programs_jax")
    for name, (fn, examples, opts) in shared.PROGRAMS.items():
        poly = opts.get("symbolic")
        out.append(("corpus", name, fn, list(examples[0]), f"shared/corpus/jax/programs_jax.py:{name}",
                    poly, bool(opts.get("build")), ()))
    builds = load(os.path.join(GEN, "builds", "programs.py"), "builds_programs")
    for p in builds.programs():
        out.append(("builds", p.name, p.fn, p.args, f"corpus-gen/builds: {p.source}", p.poly, True, ()))
    held = load(os.path.join(HERE, "programs.py"), "held_out_programs")
    for p in held.programs():
        out.append(("held_out", p.name, p.fn, p.args, f"corpus-gen/versions: {p.source}", p.poly, p.build,
                    p.constraints))
    return out


def encode_value(x):
    import jax
    if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
        return {"dtype": "key<fry>", "shape": list(x.shape),
                "data": [int(v) for v in np.asarray(jax.random.key_data(x)).reshape(-1)]}
    return encode.array(x)


def main():
    import jax
    from jax import export
    from jax._src import core
    jax.config.update("jax_enable_x64", False)
    shared_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(GEN, "..", "..", "shared", "corpus", "jax")
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    manifest, values, skipped = {}, {}, []
    for group, name, fn, args, source, poly, build, constraints in program_set(shared_dir):
        assert name not in manifest, f"two programs named {name}"
        try:
            if poly is not None:
                specs = export.symbolic_args_specs(args, poly, constraints=constraints)
                cj = jax.make_jaxpr(fn)(*specs)
                export.export(jax.jit(fn))(*specs)
            else:
                cj = jax.make_jaxpr(fn)(*args)
        except Exception as e:  # this JAX cannot trace or export it: said so
            skipped.append({"name": name, "reason": f"{type(e).__name__}: {e}"[:300]})
            continue
        try:
            core.check_jaxpr(cj.jaxpr)
            verdict = True
        except Exception:  # JAX rejects its own program: kept, never built
            verdict = False
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(str(cj) + "\n")
        consts = list(cj.consts)
        manifest[name] = {"group": group, "source": source, "check_jaxpr": verdict,
                          "num_consts": len(consts), "symbolic": poly, "constraints": list(constraints) or None,
                          "build": build,
                          # This JAX's default (False before 0.5): the random
                          # bits depend on it and the text does not say it.
                          "threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}
        if build:
            leaves = jax.tree_util.tree_leaves(args)
            outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
            values[name] = [{"inputs": [encode_value(c) for c in consts] + [encode_value(a) for a in leaves],
                             "outputs": [encode_value(o) for o in outs]}]
    encode.write_column(out, f"jax {jax.__version__}", manifest, skipped, values)
    print(f"{out}: {len(manifest)} programs ({len(values)} in the build set), {len(skipped)} skipped")


if __name__ == "__main__":
    main()
