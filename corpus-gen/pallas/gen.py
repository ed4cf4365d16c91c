"""Writes one JAX column of the Pallas and mutable-ref corpus: the programs of
programs.py as the JAX that runs this script prints them, with the values it
computes (every pallas_call interpreted on CPU).

usage: JAX_PLATFORMS=cpu python gen.py OUT_DIR

Writes OUT_DIR/jax-VERSION/: NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`),
manifest.json (per program: its doc line, `check_jaxpr` (JAX's own verdict
on its jaxpr) and the primitives it prints; `skipped`: the programs this JAX
cannot make, trace or run, with JAX's error) and values.json.gz (inputs and
the outputs of `jax.jit(f)(*args)`, 64-bit types off), in the format of
tests/data/versions (corpus-gen/versions/README.md); and NAME.recorded.json
where the text lacks what the live program holds (nested jaxprs' constants,
kernels' blocks at each grid point: jax >= 0.6 prints no index maps), as the
Python API and `jaxpr trace` record it (wheel/python/jaxpr/_recorded.py).
"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.dirname(HERE)
sys.path.insert(0, GEN)
import encode  # noqa: E402
from folder import load  # noqa: E402

recorded = load(os.path.join(os.path.dirname(GEN), "wheel", "python", "jaxpr", "_recorded.py"), "recorded")


def primitives(jaxpr):
    """The primitive names of a jaxpr and of every jaxpr in its parameters."""
    from jax._src import core
    out = set()
    for e in jaxpr.eqns:
        out.add(e.primitive.name)
        for sub in core.jaxprs_in_params(e.params):
            out |= primitives(sub)
    return out


def main():
    import jax
    from jax._src import core
    jax.config.update("jax_enable_x64", False)
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    progs = load(os.path.join(HERE, "programs.py"), "pallas_programs")
    manifest, values, skipped = {}, {}, []
    for p in progs.programs():
        try:
            fn = p.make()
            args = p.args_of()
            cj = jax.make_jaxpr(fn)(*args)
            outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        except Exception as e:  # this JAX lacks the API or refuses the program: said so
            skipped.append({"name": p.name, "reason": f"{type(e).__name__}: {e}"[:300]})
            continue
        try:
            core.check_jaxpr(cj.jaxpr)
            verdict = True
        except Exception:
            verdict = False
        text, (constants, kernels, accesses, _) = recorded.printed(cj, lambda: str(cj))
        with open(os.path.join(out, p.name + ".jaxpr"), "w") as fh:
            fh.write(text + "\n")
        # The outermost jaxpr's constants are inputs, with the values.
        constants = {k: v for k, v in constants.items() if v["nested"]}
        if recorded.anything((constants, kernels, accesses, {})):
            recorded.write(os.path.join(out, p.name + ".recorded.json"), (constants, kernels, accesses, {}))
        consts = list(cj.consts)
        manifest[p.name] = {"doc": (p.make.__doc__ or "").strip().split("\n")[0],
                            "check_jaxpr": verdict, "num_consts": len(consts),
                            "primitives": sorted(primitives(cj.jaxpr))}
        values[p.name] = [{"inputs": [encode.array(c) for c in consts]
                           + [encode.array(a) for a in jax.tree_util.tree_leaves(args)],
                           "outputs": [encode.array(o) for o in outs]}]
    encode.write_column(out, f"jax {jax.__version__}", manifest, skipped, values)
    print(f"{out}: {len(manifest)} programs, {len(skipped)} skipped")
    for s in skipped:
        print(f"  skipped {s['name']}: {s['reason'][:150]}")


if __name__ == "__main__":
    main()
