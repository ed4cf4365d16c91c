"""XLA's own cost figures for a program, which `jaxpr stats` is held to.

`cost(fn, args)` returns what XLA's HLO cost analysis says of JAX's lowering,
`jax.jit(fn).lower(*args).cost_analysis()` (`flops`, `transcendentals`,
`bytes accessed`), and, when `memory` is set, the sizes XLA's buffer
assignment gives the compiled program, `.compile().memory_analysis()`.
Both corpus generators write these into a sidecar `cost.json` beside the
programs (`corpus-gen/cost.py`); the printed jaxprs are not touched.
"""


def cost(fn, args, memory=False):
    import jax
    lowered = jax.jit(fn).lower(*args)
    analysis = lowered.cost_analysis()
    if isinstance(analysis, list):  # older JAX: one dict per device
        analysis = analysis[0]
    out = {"flops": float(analysis.get("flops", 0.0)),
           "transcendentals": float(analysis.get("transcendentals", 0.0)),
           "bytes_accessed": float(analysis.get("bytes accessed", 0.0))}
    if memory:
        stats = lowered.compile().memory_analysis()
        out["memory"] = {"argument": int(stats.argument_size_in_bytes),
                         "output": int(stats.output_size_in_bytes),
                         "alias": int(stats.alias_size_in_bytes),
                         "temp": int(stats.temp_size_in_bytes)}
    return out
