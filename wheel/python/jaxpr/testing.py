"""Assertions for tests (pytest shows their messages): what a project wants
to keep true of its functions in CI.

    from jaxpr.testing import assert_valid, assert_cost, assert_no_key_reuse, assert_collectives

Each takes what the commands take (a function and example arguments, a
`ClosedJaxpr`, a `jax.stages.Traced`) and raises `AssertionError` with the
diagnostics as `jaxpr check` prints them, or the offending equations.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Sequence

from ._api import check, stats
from ._program import Program
from ._results import Diagnostic

__all__ = ["assert_valid", "assert_cost", "assert_no_key_reuse", "assert_collectives"]


def _fail(title: str, found: Sequence[Diagnostic]) -> None:
    raise AssertionError(title + "\n\n" + "\n\n".join(str(d) for d in found))


def assert_valid(f: Any, *args: Any, allow_warnings: bool = True, **kwargs: Any) -> None:
    """Fails when `jaxpr check` reports an error (or any diagnostic, with
    `allow_warnings=False`), under the project's rule configuration."""
    report = check(f, *args, **kwargs)
    found = [d for d in report if d.severity == "error" or not allow_warnings]
    if found:
        _fail(f"jaxpr check found {len(found)} problem{'s' * (len(found) != 1)} in {report.program.name}:", found)


def assert_no_key_reuse(f: Any, *args: Any, **kwargs: Any) -> None:
    """Fails when a PRNG key is consumed twice (J0013 `key-reuse`), whatever
    the configuration selects."""
    report = check(f, *args, select=["key-reuse"], config=False, **kwargs)
    if len(report):
        _fail(f"{report.program.name} reuses a PRNG key:", report)


def _equations(prog: Program, lines: Iterable[int]) -> str:
    text = prog.text.split("\n")
    shown = []
    for line in lines:
        if 0 < line <= len(text):
            shown.append(f"  {line:>5} | {text[line - 1].strip()}")
    return "\n".join(shown)


def assert_cost(
    f: Any,
    *args: Any,
    flops_at_most: Optional[int] = None,
    peak_bytes_at_most: Optional[int] = None,
    bytes_accessed_at_most: Optional[int] = None,
    transcendentals_at_most: Optional[int] = None,
    xla_loops: bool = False,
    **kwargs: Any,
) -> None:
    """Fails when `jaxpr stats` counts more than the budget, showing the
    most expensive equations (and the peak's line)."""
    s = stats(f, *args, xla_loops=xla_loops, **kwargs)
    total = s.total
    over = []
    for what, got, limit in (
        ("FLOPs", total.flops, flops_at_most),
        ("bytes accessed", total.bytes_accessed, bytes_accessed_at_most),
        ("transcendentals", total.transcendentals, transcendentals_at_most),
        ("peak live bytes", s.peak_bytes, peak_bytes_at_most),
    ):
        if limit is not None and got > limit:
            over.append(f"{what}: {got:,} > {limit:,}")
    if not over:
        return
    costly = s.data.get("most_expensive", [])[:5]
    lines = [
        f"  {e['primitive']} at line {e['line']}: {int(e['cost']['flops']):,} FLOPs, {int(e['cost']['bytes_accessed']):,} bytes"
        for e in costly
    ]
    peak = [j for j in s.data["jaxprs"] if j["name"] == "main"]
    message = f"{s.program.name} is over budget: " + "; ".join(over)
    message += "\nmost expensive equations:\n" + "\n".join(lines)
    message += "\n" + _equations(s.program, [e["line"] for e in costly])
    if peak and peak_bytes_at_most is not None:
        message += f"\npeak live bytes at line {peak[0]['peak_line']}:\n" + _equations(s.program, [peak[0]["peak_line"]])
    raise AssertionError(message)


def assert_collectives(f: Any, *args: Any, expected: Dict[Any, int], **kwargs: Any) -> None:
    """Fails unless each device runs exactly the `expected` collectives in
    one call, as `jaxpr stats` plans them per device: a collective inside a
    `scan` of length 8 runs 8 times. Keys are a primitive (`{"psum": 2}`)
    or a primitive and its mesh axes (`{("psum", "x"): 1, ("all_gather",
    "x", "y"): 1}`); `axis_index` and others that move nothing, and
    collectives JAX's lowering drops, are not counted. A collective whose
    number of runs the program does not fix (inside a `while` loop or one
    branch of a `cond`) fails the assertion, naming it."""
    s = stats(f, *args, **kwargs)
    moving = [c for c in s.collectives if c.get("moves", True) and not c.get("dropped", False)]
    by_axes = any(isinstance(k, tuple) for k in expected)
    counts: Dict[Any, int] = {}
    unknown = []
    for c in moving:
        runs = c.get("runs", 1)
        if not isinstance(runs, int):
            unknown.append(c)
            continue
        key = (c["primitive"], *(a for a, _ in c["axes"])) if by_axes else c["primitive"]
        counts[key] = counts.get(key, 0) + runs
    want = {(k if not by_axes or isinstance(k, tuple) else (k,)): v for k, v in expected.items() if v}
    def times(c: Dict[str, Any]) -> str:
        n = c.get("runs", 1)
        if isinstance(n, int):
            return f"{n} time{'s' * (n != 1)} per call"
        return f"an unknown number of times per call ({c.get('runs_unknown') or n})"

    rows = "\n".join(
        f"  line {c['line']}: {c['primitive']} over {[a for a, _ in c['axes']]}, {times(c)}, "
        f"{c['bytes_per_device']} bytes per device each ({c['algorithm']})"
        for c in moving
    )
    if unknown:
        raise AssertionError(
            f"{s.program.name}: {len(unknown)} collective(s) run a number of times the program does not fix:\n"
            + rows + "\n" + _equations(s.program, [c["line"] for c in unknown])
        )
    if counts != want:
        raise AssertionError(
            f"{s.program.name}: collectives per device per call {counts}, expected {want}\n{rows}\n"
            + _equations(s.program, [c["line"] for c in moving])
        )
