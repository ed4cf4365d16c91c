"""JAX's key-reuse verdicts on the other corpora's programs that use PRNG keys:
the ecosystem corpus and the version matrix's JAX columns.

    /work/venvs/eco-jax-0.10.2/bin/python corpus-gen/key_reuse/corpora.py ecosystem tests/data/key-reuse
    /work/venvs/venv-trace-jax-0.4.30/bin/python corpus-gen/key_reuse/corpora.py versions tests/data/key-reuse
    (one run per JAX column of the version matrix)

Each program is traced again as its own generator traces it, and kept only when
the text equals the stored one. A program whose text uses keys (a `key<` type
or a `random_` primitive) gets the verdict of this JAX's own checker
(`jax.experimental.key_reuse._core.check_key_reuse_jaxpr`). JAX's checker does
not follow raw `uint32` key data (`jax.random.PRNGKey`); a program that takes
raw key data is traced a second time with each such argument a typed key
(`jax.random.wrap_key_data` of the same data), its *typed twin*, written to
OUT/corpora/, whose verdict says whether the raw-key program reuses a key by
JAX's own rule.

Writes OUT/corpora/CORPUS.json (CORPUS: `ecosystem` or `jax-VERSION`), keyed by
the program's path under tests/data.
"""
import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.dirname(HERE)
ROOT = os.path.dirname(GEN)
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, GEN)
sys.path.insert(0, HERE)
from folder import load  # noqa: E402
from gen import verdict  # noqa: E402


def uses_keys(text):
    return "key<" in text or "random_" in text or "threefry2x32" in text


def is_raw_key(x):
    """Key data as `jax.random.PRNGKey` gives it (uint32[2])."""
    import numpy as np
    return getattr(x, "dtype", None) == np.uint32 and tuple(getattr(x, "shape", ())) == (2,)


def typed_twin(fn, args, trace):
    """The closed jaxpr of `fn` with each raw-key argument a typed key, or None."""
    import jax
    if not any(is_raw_key(a) for a in args):
        return None
    typed = [jax.random.wrap_key_data(a) if is_raw_key(a) else a for a in args]
    return trace(fn, typed)


def consider(out, path, trace, fn, args, symbolic, produced):
    """Records the program at tests/data/`path` if its text, as `trace`
    gives it for `args`, is the stored one and uses keys."""
    stored = os.path.join(DATA, path)
    if not os.path.exists(stored):
        return
    cj = trace(fn, args)
    text = str(cj) + "\n"
    if not uses_keys(text):
        return
    if text != open(stored).read():
        print(f"{path}: traced text differs from the stored one; left out", flush=True)
        return
    twin = typed_twin(fn, args, trace) if not symbolic else None
    reuse, why = verdict(cj.jaxpr)
    entry = {"jax_key_reuse": reuse, "jax_message": why}
    if twin is not None:
        name = path.replace("/", "__").replace(".jaxpr", ".typed.jaxpr")
        with open(os.path.join(out, "corpora", name), "w") as fh:
            fh.write(str(twin) + "\n")
        treuse, twhy = verdict(twin.jaxpr)
        entry.update(typed_twin=f"corpora/{name}", typed_twin_jax_key_reuse=treuse,
                     typed_twin_jax_message=twhy)
    produced[path] = entry


def ecosystem(out, produced):
    import jax
    sys.path.insert(0, os.path.join(GEN, "ecosystem"))
    import folder
    from jax import export

    def trace(p):
        def at(fn, args):
            folder.partitionable(p)
            if p.poly is not None:
                return jax.make_jaxpr(fn)(*export.symbolic_args_specs(args, p.poly))
            return jax.make_jaxpr(fn)(*args)
        return at
    groups = sorted(f[len("programs_"):-3] for f in os.listdir(os.path.join(GEN, "ecosystem"))
                    if f.startswith("programs_") and f.endswith(".py"))
    for group in groups:
        module = importlib.import_module(f"programs_{group}")
        for p in module.programs():
            consider(out, f"ecosystem/{group}/{p.name}.jaxpr", trace(p), p.fn, p.args, p.poly is not None,
                     produced)
            jax.clear_caches()
    return "ecosystem"


def versions(out, produced):
    import jax
    from jax import export
    gen = load(os.path.join(GEN, "versions", "gen.py"), "versions_gen")
    shared = os.path.join(ROOT, "..", "shared", "corpus", "jax")
    column = f"jax-{jax.__version__}"
    jax.config.update("jax_enable_x64", False)
    for group, name, fn, args, source, poly, build, constraints in gen.program_set(shared):
        def trace(fn, args, poly=poly, constraints=constraints):
            if poly is not None:
                return jax.make_jaxpr(fn)(*export.symbolic_args_specs(args, poly, constraints=constraints))
            return jax.make_jaxpr(fn)(*args)
        consider(out, f"versions/{column}/{name}.jaxpr", trace, fn, args, poly is not None, produced)
    return column


def main():
    import jax
    which, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "corpora"), exist_ok=True)
    produced = {}
    corpus = {"ecosystem": ecosystem, "versions": versions}[which](out, produced)
    with open(os.path.join(out, "corpora", f"{corpus}.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "verdicts": produced}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    reuses = sum(v["jax_key_reuse"] or v.get("typed_twin_jax_key_reuse", False) for v in produced.values())
    print(f"{corpus}: {len(produced)} programs use keys, {reuses} reuse one by JAX's checker "
          f"({sum('typed_twin' in v for v in produced.values())} typed twins)")


if __name__ == "__main__":
    main()
