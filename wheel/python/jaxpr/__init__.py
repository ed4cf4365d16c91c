"""The `jaxpr` CLI's commands from Python, on live functions.

    import jax, jaxpr
    jaxpr.check(f, x)              # Report: [Diagnostic(...)], as `jaxpr check` (rule options, configuration)
    jaxpr.types(f, x)              # [Signature(...)]: in_type/out_type of every jaxpr
    jaxpr.stats(f, x)              # Stats: FLOPs, bytes, peak, per Python line; .to_dict(), .to_dataframe()
    jaxpr.graph(f, x)              # Graph: the HTML viewer of `jaxpr graph` (inline in a notebook)
    jaxpr.diff(f, g, x)            # Diff: what changed between two traces
    jaxpr.build(f, x)              # a native function: numpy/JAX arrays in, numpy arrays out
    jaxpr.build(f, x, emit="stablehlo")
    jaxpr.assert_valid(f, x)       # and jaxpr.testing's other assertions, for pytest

Every command takes a function and example arguments (as
`jax.make_jaxpr(f)(*args, **kwargs)`), a `ClosedJaxpr`/`Jaxpr`, a
`jax.stages.Traced`, or a `Program` from `jaxpr.trace(f, *args)`. The
jaxpr is printed with source info (each equation's Python line) and read by
the `jaxpr` binary installed with this package.
"""

from ._api import BuildError, build, check, check_text, diff, graph, stats, trace, types
from ._cli import JaxprError, binary
from ._native import NativeCallError, NativeFunction
from ._program import Program, PythonLocation
from ._results import Cost, Diagnostic, Diff, Graph, Range, Related, Report, Signature, StableHLO, Stats
from .testing import assert_collectives, assert_cost, assert_no_key_reuse, assert_valid

__all__ = [
    "BuildError",
    "Cost",
    "Diagnostic",
    "Diff",
    "Graph",
    "JaxprError",
    "NativeCallError",
    "NativeFunction",
    "Program",
    "PythonLocation",
    "Range",
    "Related",
    "Report",
    "Signature",
    "StableHLO",
    "Stats",
    "assert_collectives",
    "assert_cost",
    "assert_no_key_reuse",
    "assert_valid",
    "binary",
    "build",
    "check",
    "check_text",
    "diff",
    "graph",
    "stats",
    "trace",
    "types",
]
