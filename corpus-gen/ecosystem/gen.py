"""Writes the ecosystem corpus: programs written as the JAX libraries' own
documentation and examples write them (flax, optax, equinox, diffrax, ...),
printed by the JAX that runs this script, and for the build set the values
JAX computes for them.

usage: python gen.py OUT_DIR [GROUP ...]

Writes OUT_DIR/GROUP/ for each module `programs_GROUP.py` beside this file
(or only the GROUPs named), in the format of tests/data/jax-suite
(corpus-gen/jax/README.md): NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`,
traced at symbolic shapes for the shape-polymorphic ones), manifest.json, and
values.json.gz with JAX's values (`jax.jit(f)(*args)`, 64-bit types off) for
the programs of the build set: those whose inputs and outputs are all plain
arrays. A program the library cannot trace here, or whose jaxpr is larger
than MAX_CHARS, is listed under `skipped` with the reason.
"""
import importlib, importlib.metadata, os, sys, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import folder  # noqa: E402

# A jaxpr longer than this is left out: the corpus stays a few MB, and such a
# program tests nothing its smaller siblings do not.
MAX_CHARS = 200_000
# A build-set program whose inputs and outputs hold more elements than this
# has no values (its jaxpr is kept); the programs' sizes are chosen below it.
MAX_ELEMENTS = 6_000


def groups():
    return sorted(f[len("programs_"):-3] for f in os.listdir(HERE)
                  if f.startswith("programs_") and f.endswith(".py"))


def elements(value):
    return sum(len(v["data"]) for v in value[0]["inputs"] + value[0]["outputs"])


def generate(out_root, group):
    import jax
    module = importlib.import_module(f"programs_{group}")
    versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in ["jax", *module.DISTRIBUTIONS])
    manifest, values, texts, skipped = {}, {}, {}, {}
    for p in module.programs():
        try:
            cj = folder.trace(p)
            text = str(cj)
            if len(text) > MAX_CHARS:
                skipped[p.name] = f"its jaxpr has {len(text)} characters (more than {MAX_CHARS})"
                continue
            entry = folder.entry(p, cj)
            entry["build"] = False
            if p.build:
                v = folder.values(p, cj)
                if elements(v) <= MAX_ELEMENTS:
                    values[p.name] = v
                    entry["build"] = True
                else:
                    entry["no_values"] = f"{elements(v)} elements in its inputs and outputs"
        except Exception as e:  # the library cannot trace it here: recorded, not fatal
            traceback.print_exc()
            skipped[p.name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            continue
        texts[p.name], manifest[p.name] = text, entry
        jax.clear_caches()
    out = os.path.join(out_root, group)
    folder.write(out, versions, manifest, values, texts, extra={"skipped": skipped})
    print(f"{out}: {len(manifest)} programs, {len(values)} with values, {len(skipped)} skipped")
    for name, why in skipped.items():
        print(f"  skipped {name}: {why}")


def main():
    names = sys.argv[2:] or groups()
    for g in names:
        generate(sys.argv[1], g)


if __name__ == "__main__":
    main()
