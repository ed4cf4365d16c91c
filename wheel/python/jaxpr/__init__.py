"""Check jaxprs you hold in Python, with the same checker as the `jaxpr` CLI.

    import jax, jaxpr
    closed = jax.make_jaxpr(f)(x)
    jaxpr.check(closed)          # [Diagnostic(...), ...]: kinds and codes as `jaxpr check`
    jaxpr.types(closed)          # [Signature(...), ...]: in_type/out_type of every jaxpr
    jaxpr.assert_valid(closed)   # raises AssertionError listing the errors

The jaxpr is printed with source info (each equation's Python line) and
checked by the `jaxpr` binary installed with this package.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

__all__ = [
    "Diagnostic",
    "Signature",
    "JaxprError",
    "check",
    "check_text",
    "types",
    "assert_valid",
    "binary",
]


class JaxprError(Exception):
    """The value cannot be checked: not a jaxpr, a jaxpr this version of JAX
    cannot print, or the checker could not run."""


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" or "warning"
    code: str  # "J0004"
    kind: str  # "shape-mismatch"
    message: str
    line: int  # 1-based, in the printed jaxpr
    column: int  # 1-based, in characters
    end_line: int
    end_column: int
    help: Optional[str]
    source_line: str  # the printed jaxpr's line, for messages

    def __str__(self) -> str:
        text = f"{self.severity}[{self.code}]: {self.message}\n  {self.line}:{self.column} | {self.source_line.strip()}"
        if self.help:
            text += f"\n  help: {self.help}"
        return text


@dataclasses.dataclass(frozen=True)
class Signature:
    what: str  # "main jaxpr", "body_jaxpr of `for_loop` at 2:24", ...
    line: int
    column: int
    in_type: str  # "((i64[], False), (f64[DBIdx(0)], True))"
    out_type: str


def binary() -> str:
    """The `jaxpr` executable: `$JAXPR_BIN`, else the one installed with this
    package (the environment's scripts folder), else the first on PATH."""
    given = os.environ.get("JAXPR_BIN")
    if given:
        return given
    name = "jaxpr.exe" if sys.platform == "win32" else "jaxpr"
    here = Path(__file__).resolve()
    # site-packages/jaxpr/__init__.py -> <prefix>/bin (or Scripts).
    for prefix in here.parents[2:5]:
        for scripts in ("bin", "Scripts"):
            candidate = prefix / scripts / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise JaxprError(
        f"the `jaxpr` executable was not found beside this package ({here.parents[2]}) "
        "nor on PATH; reinstall the `jaxpr` wheel or set JAXPR_BIN"
    )


def _text(closed_jaxpr) -> str:
    """The jaxpr printed with source info, one equation a line (a jaxpr that
    fits in the width is printed on one line with its comments gathered
    after it, so narrower widths are tried until the printer breaks it)."""
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    printer = getattr(jaxpr, "pretty_print", None)
    if printer is None or not hasattr(jaxpr, "eqns"):
        raise JaxprError(
            f"expected a jax ClosedJaxpr or Jaxpr (from jax.make_jaxpr), got {type(closed_jaxpr).__name__}"
        )
    try:
        text = ""
        for width in (80, 60, 40, 20, 1):
            text = printer(source_info=True, name_stack=False, width=width)
            first = text.split("\n", 1)[0].rstrip()
            if first.endswith("let") or " let " not in first:
                break
        return text
    except Exception as e:  # the printer of another JAX version
        raise JaxprError(f"this jaxpr cannot be printed by the installed JAX: {type(e).__name__}: {e}") from e


def _run(args: List[str], text: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="jaxpr-") as d:
        path = Path(d) / "jaxpr.jaxpr"
        path.write_text(text, encoding="utf-8")
        try:
            return subprocess.run(
                [binary(), *args, str(path)],
                capture_output=True,
                text=True,
                timeout=600,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise JaxprError(f"the checker could not run: {e}") from e


def check_text(text: str) -> List[Diagnostic]:
    """Diagnostics of a jaxpr given as text (as JAX or Catalyst print it)."""
    done = _run(["check", "--format", "json", "--color", "never"], text)
    if done.returncode not in (0, 1):
        raise JaxprError(f"jaxpr check failed (exit {done.returncode}): {done.stderr.strip()}")
    try:
        report = json.loads(done.stdout)
        found = report["files"][0]["diagnostics"]
    except (ValueError, KeyError, IndexError) as e:
        raise JaxprError(f"unexpected output of jaxpr check: {done.stdout[:200]!r}") from e
    lines = text.split("\n")
    return [
        Diagnostic(
            severity=d["severity"],
            code=d["code"],
            kind=d["kind"],
            message=d["message"],
            line=d["range"]["start"]["line"],
            column=d["range"]["start"]["column"],
            end_line=d["range"]["end"]["line"],
            end_column=d["range"]["end"]["column"],
            help=d.get("help"),
            source_line=lines[d["range"]["start"]["line"] - 1] if d["range"]["start"]["line"] <= len(lines) else "",
        )
        for d in found
    ]


def check(closed_jaxpr) -> List[Diagnostic]:
    """Diagnostics of a jaxpr (a `jax.make_jaxpr` result or its `.jaxpr`)."""
    return check_text(_text(closed_jaxpr))


def types(closed_jaxpr) -> List[Signature]:
    """`in_type`/`out_type` of the jaxpr and every nested jaxpr, with de
    Bruijn indices, as `jaxpr types` prints them."""
    done = _run(["types"], _text(closed_jaxpr))
    if done.returncode != 0:
        raise JaxprError(f"jaxpr types failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    signatures = []
    current = None
    for line in done.stdout.splitlines():
        if line.startswith("  in_type:"):
            current["in_type"] = line.split(":", 1)[1].strip()
        elif line.startswith("  out_type:"):
            current["out_type"] = line.split(":", 1)[1].strip()
            signatures.append(Signature(**current))
        elif line.strip():
            # PATH:LINE:COL: what
            head, what = line.split(": ", 1)
            _, row, col = head.rsplit(":", 2)
            current = {"what": what, "line": int(row), "column": int(col)}
    return signatures


def assert_valid(closed_jaxpr, allow_warnings: bool = True) -> None:
    """Fails (AssertionError, as pytest shows it) when the checker reports an
    error, or any diagnostic with `allow_warnings=False`."""
    found = [d for d in check(closed_jaxpr) if d.severity == "error" or not allow_warnings]
    if found:
        raise AssertionError("jaxpr check found:\n" + "\n".join(str(d) for d in found))
