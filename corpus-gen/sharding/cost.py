"""XLA's cost figures for the sharding corpus, which `jaxpr stats`'s per-device
counts are held to (`crates/cost/tests/sharding.rs`).

usage: python cost.py OUT_DIR   (the folder `gen.py` wrote: OUT_DIR/jax-VERSION/)

For each program of `programs.py` whose jaxpr this JAX prints exactly as the
folder holds it, writes to OUT_DIR/jax-VERSION/cost.json what XLA's HLO cost
analysis says (`flops`, `transcendentals`, `bytes accessed`) of

- `lowered`: JAX's lowering before SPMD partitioning,
  `jax.jit(f).lower(*args).cost_analysis()`;
- `compiled`: the partitioned, optimised module of the compiled executable,
  `.compile().cost_analysis()`, which is one device's program.

Run after `gen.py`, which empties the folder.
"""
import os
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import json, sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from folder import load  # noqa: E402


def figures(analysis):
    if isinstance(analysis, list):  # older JAX: one dict per device
        analysis = analysis[0]
    return {"flops": float(analysis.get("flops", 0.0)),
            "transcendentals": float(analysis.get("transcendentals", 0.0)),
            "bytes_accessed": float(analysis.get("bytes accessed", 0.0))}


def main():
    import jax
    jax.config.update("jax_enable_x64", False)
    assert len(jax.devices()) == 8, jax.devices()
    programs = load(os.path.join(HERE, "programs.py"), "sharding_programs")
    api = programs.Api()
    out = os.path.join(sys.argv[1], f"jax-{jax.__version__}")
    result, skipped = {}, {}
    for name, build in programs.PROGRAMS.items():
        path = os.path.join(out, name + ".jaxpr")
        if not os.path.exists(path):
            continue
        fn, args = build(api)
        printed = str(jax.make_jaxpr(fn)(*args)) + "\n"
        with open(path) as fh:
            if fh.read() != printed:
                skipped[name] = "prints another jaxpr"
                continue
        lowered = jax.jit(fn).lower(*args)
        result[name] = {"lowered": figures(lowered.cost_analysis()),
                        "compiled": figures(lowered.compile().cost_analysis())}
    with open(os.path.join(out, "cost.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "devices": 8, "programs": result,
                   "skipped": skipped}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"{out}: {len(result)} programs with XLA's cost, {len(skipped)} skipped {sorted(skipped)}")


if __name__ == "__main__":
    main()
