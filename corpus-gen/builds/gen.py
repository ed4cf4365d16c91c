"""Writes the builds corpus: small programs whose builds once went wrong or
were refused, printed by the JAX that runs this script, with the values that
JAX computes for them.

usage: python gen.py OUT_DIR

Writes OUT_DIR/jax-VERSION/ (VERSION is this JAX's, e.g. jax-0.4.30): for each
program of `programs.py` that this JAX has, NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`),
and manifest.json and values.json.gz in the format of tests/data/jax-suite
(corpus-gen/jax/README.md), which `crates/jaxpr-build/tests/jax_suite.rs` reads.
Values are JAX's own, computed by `jax.jit(f)(*args)` with 64-bit types off, as
a user runs the program, with the `jax_threefry_partitionable` the manifest
records (this JAX's default unless the program sets it).
"""
import gzip, json, os, sys
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import encode  # noqa: E402


def main():
    import jax
    from jax._src import core
    import programs
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    manifest, values = {}, {}
    default_partitionable = jax.config.jax_threefry_partitionable
    for p in programs.programs():
        partitionable = (default_partitionable if p.threefry_partitionable is None
                         else p.threefry_partitionable)
        jax.config.update("jax_threefry_partitionable", partitionable)
        if p.poly is not None:
            from jax import export
            cj = jax.make_jaxpr(p.fn)(*export.symbolic_args_specs(p.args, p.poly))
        else:
            cj = jax.make_jaxpr(p.fn)(*p.args)
        core.check_jaxpr(cj.jaxpr)
        assert not cj.consts, f"{p.name}: a program with constants"
        outs = jax.tree_util.tree_leaves(jax.jit(p.fn)(*p.args))
        with open(os.path.join(out, p.name + ".jaxpr"), "w") as fh:
            fh.write(str(cj) + "\n")
        manifest[p.name] = {"source": p.source, "check_jaxpr": True, "num_consts": 0,
                            "symbolic": p.poly, "constraints": None,
                            "threefry_partitionable": partitionable}
        values[p.name] = [{"inputs": [encode.array(a) for a in jax.tree_util.tree_leaves(p.args)],
                           "outputs": [encode.array(o) for o in outs]}]
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "programs": manifest},
                  fh, indent=1, sort_keys=True)
        fh.write("\n")
    text = json.dumps(values, separators=(",", ":"), sort_keys=True).encode()
    with open(os.path.join(out, "values.json.gz"), "wb") as fh:
        fh.write(gzip.compress(text, mtime=0))
    print(f"{out}: {len(manifest)} programs")


if __name__ == "__main__":
    main()
