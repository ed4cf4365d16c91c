"""Writes one JAX column of the sharding corpus: the multi-device programs of
`programs.py` as the JAX that runs this script prints them on 8 CPU devices
(`--xla_force_host_platform_device_count=8`), with the values it computes.

usage: python gen.py OUT_DIR

Writes OUT_DIR/jax-VERSION/ in the format of tests/data/jax-suite
(corpus-gen/jax/README.md): NAME.jaxpr (`str(jax.make_jaxpr(f)(*args))`),
manifest.json (per program: `check_jaxpr`, JAX's verdict on its own jaxpr,
and `num_consts`; programs this JAX cannot express under `skipped`, with its
error) and values.json.gz (`jax.jit(f)(*args)`, inputs the constants then the
arguments' leaves, gathered to the host).
"""
import os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import gzip, json, sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import encode  # noqa: E402
from folder import load  # noqa: E402


def main():
    import jax
    import numpy as np
    from jax._src import core
    jax.config.update("jax_enable_x64", False)
    assert len(jax.devices()) == 8, jax.devices()
    programs = load(os.path.join(HERE, "programs.py"), "sharding_programs")
    api = programs.Api()
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    manifest, values, skipped = {}, {}, []
    for name, build in programs.PROGRAMS.items():
        try:
            fn, args = build(api)
            cj = jax.make_jaxpr(fn)(*args)
            outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        except Exception as e:  # this JAX cannot express it: said so
            skipped.append({"name": name, "reason": f"{type(e).__name__}: {e}"[:300]})
            continue
        try:
            core.check_jaxpr(cj.jaxpr)
            verdict = True
        except Exception:
            verdict = False
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(str(cj) + "\n")
        consts = list(cj.consts)
        manifest[name] = {"source": f"corpus-gen/sharding/programs.py:{name}", "check_jaxpr": verdict,
                          "num_consts": len(consts)}
        leaves = jax.tree_util.tree_leaves(args)
        values[name] = [{"inputs": [encode.array(np.asarray(c)) for c in consts]
                         + [encode.array(np.asarray(a)) for a in leaves],
                         "outputs": [encode.array(np.asarray(o)) for o in outs]}]
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "devices": 8, "programs": manifest, "skipped": skipped},
                  fh, indent=1, sort_keys=True)
        fh.write("\n")
    text = json.dumps(values, separators=(",", ":"), sort_keys=True).encode()
    with open(os.path.join(out, "values.json.gz"), "wb") as fh:
        fh.write(gzip.compress(text, mtime=0))
    print(f"{out}: {len(manifest)} programs, {len(skipped)} skipped")
    for s in skipped:
        print(f"  skipped {s['name']}: {s['reason'][:200]}")


if __name__ == "__main__":
    main()
