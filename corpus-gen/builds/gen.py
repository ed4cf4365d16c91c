"""Writes the builds corpus: small programs whose builds once went wrong or
were refused, printed by the JAX that runs this script, with the values that
JAX computes for them.

usage: python gen.py OUT_DIR

Writes OUT_DIR/jax-VERSION/ (VERSION is this JAX's, e.g. jax-0.4.30): for each
program of `programs.py` that this JAX has, NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`),
and manifest.json and values.json.gz in the format of tests/data/jax-suite
(corpus-gen/jax/README.md), which `crates/jaxpr-build/tests/jax_suite.rs` reads.
Values are JAX's own, computed by `jax.jit(f)(*args)` with 64-bit types off, as
a user runs the program.
"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import folder  # noqa: E402


def main():
    import jax
    import programs
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    manifest, values, texts = {}, {}, {}
    for p in programs.programs():
        cj = folder.trace(p)
        assert not cj.consts, f"{p.name}: a program with constants"
        texts[p.name] = str(cj)
        manifest[p.name] = folder.entry(p, cj)
        values[p.name] = folder.values(p, cj)
    folder.write(out, f"jax {jax.__version__}", manifest, values, texts)
    print(f"{out}: {len(manifest)} programs")


if __name__ == "__main__":
    main()
