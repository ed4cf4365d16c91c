"""The commands of the CLI on what a Python user holds."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence, Union, overload

from . import _native
from ._cli import JaxprError, rule_args, run_in, run_on
from ._program import Program, program
from ._results import Diagnostic, Diff, Graph, Range, Related, Report, Signature, StableHLO, Stats

Rules = Optional[Union[str, Sequence[str]]]


class BuildError(JaxprError):
    """`jaxpr build` refused the program: `diagnostics` say why (as `check`)."""

    def __init__(self, message: str, diagnostics: List[Diagnostic]):
        super().__init__(message)
        self.diagnostics = diagnostics


def trace(f: Any, *args: Any, **kwargs: Any) -> Program:
    """The program every command reads: `f` traced on the example arguments
    (as `jax.make_jaxpr(f)(*args, **kwargs)`), or a `ClosedJaxpr`, `Jaxpr`
    or `jax.stages.Traced` as it is (`Program(name, text)` for text). Pass it
    to the commands when `f`'s own keyword arguments are named like their
    options."""
    return program(f, args, kwargs)


def _human_blocks(text: str) -> List[str]:
    """`jaxpr check`'s human output, one block per diagnostic."""
    blocks: List[List[str]] = []
    for line in text.split("\n"):
        if re.match(r"^(error|warning)\[J\d{4}\]", line):
            blocks.append([line])
        elif line.startswith("checked ") and " file" in line:
            break
        elif blocks:
            blocks[-1].append(line)
    return ["\n".join(b).rstrip() for b in blocks]


def _diagnostics(found: List[Dict[str, Any]], prog: Program, rendered: Sequence[str], folder: str) -> List[Diagnostic]:
    lines = prog.text.split("\n")
    if len(rendered) != len(found):
        rendered = [""] * len(found)
    out = []
    for d, human in zip(found, rendered):
        r = Range.of(d["range"])
        out.append(
            Diagnostic(
                severity=d["severity"],
                code=d["code"],
                kind=d["kind"],
                message=d["message"],
                line=r.line,
                column=r.column,
                end_line=r.end_line,
                end_column=r.end_column,
                help=d.get("help"),
                source_line=lines[r.line - 1] if 0 < r.line <= len(lines) else "",
                related=[
                    Related(x.get("message", ""), Range.of(x["range"]), x.get("path", "").replace(folder, ""))
                    for x in d.get("related", [])
                ],
                python=prog.python_location(r.line),
                rendered=human,
            )
        )
    return out


def _check(prog: Program, options: List[str]) -> Report:
    texts = [(prog.name, prog.text)]
    done, folder = run_on(["check", "--format", "json", "--color", "never", *options], texts)
    if done.returncode not in (0, 1):
        raise JaxprError(f"jaxpr check failed (exit {done.returncode}): {done.stderr.strip()}")
    try:
        report = json.loads(done.stdout)
        found = report["files"][0]["diagnostics"]
        summary = report["summary"]
    except (ValueError, KeyError, IndexError) as e:
        raise JaxprError(f"unexpected output of jaxpr check: {done.stdout[:200]!r}") from e
    human, human_folder = run_on(["check", "--color", "never", *options], texts)
    rendered = [b.replace(human_folder, "") for b in _human_blocks(human.stdout)]
    line = f"checked 1 file: {summary['errors']} error{'s' * (summary['errors'] != 1)}, {summary['warnings']} warning{'s' * (summary['warnings'] != 1)}"
    return Report(_diagnostics(found, prog, rendered, folder), prog, line)


def check(
    f: Any,
    *args: Any,
    select: Rules = None,
    ignore: Rules = None,
    warn: Rules = None,
    error: Rules = None,
    config: Union[None, bool, str, "os.PathLike[str]"] = None,
    **kwargs: Any,
) -> Report:
    """Diagnostics of `f` traced on the arguments (or of a jaxpr), as
    `jaxpr check`. `select`/`ignore`/`warn`/`error` are its rule options
    (codes, names, prefixes, "ALL"); the configuration is the nearest
    `jaxpr.toml` or `pyproject.toml` with `[tool.jaxpr]` above `f`'s source
    file (else the working directory), or `config=PATH`, or none with
    `config=False`."""
    prog = program(f, args, kwargs)
    return _check(prog, rule_args(select, ignore, warn, error, config, prog.source_dir))


def check_text(text: str, **options: Any) -> Report:
    """Diagnostics of a jaxpr given as text (as JAX or Catalyst print it)."""
    return check(Program("jaxpr", text), **options)


def types(f: Any, *args: Any, **kwargs: Any) -> List[Signature]:
    """`in_type`/`out_type` of the jaxpr and every nested jaxpr, with de
    Bruijn indices, as `jaxpr types` prints them."""
    prog = program(f, args, kwargs)
    done, _ = run_on(["types"], [(prog.name, prog.text)])
    if done.returncode != 0:
        raise JaxprError(f"jaxpr types failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    signatures = []
    current: Dict[str, Any] = {}
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


def stats(f: Any, *args: Any, xla_loops: bool = False, **kwargs: Any) -> Stats:
    """What `f` costs, as `jaxpr stats`: FLOPs, transcendentals, bytes
    accessed, peak live bytes, per jaxpr, per Python line, per primitive,
    and the collectives per device. `xla_loops=True` counts a loop body once,
    as XLA's cost analysis does."""
    prog = program(f, args, kwargs)
    extra = ["--xla-loops"] if xla_loops else []
    texts = [(prog.name, prog.text)]
    done, _ = run_on(["stats", "--format", "json", *extra], texts)
    if done.returncode != 0:
        raise JaxprError(f"jaxpr stats failed (exit {done.returncode}): {done.stderr.strip()}")
    data = json.loads(done.stdout)["files"][0]
    if data.get("total") is None:  # not counted: the text does not parse
        raise JaxprError(f"jaxpr stats could not count {prog.name}:\n{_check(prog, [])}")
    table, folder = run_on(["stats", *extra], texts)
    return Stats(data, prog, table.stdout.replace(folder, ""))


def graph(f: Any, *args: Any, open_depth: Optional[int] = None, **kwargs: Any) -> Graph:
    """The dataflow graph, as `jaxpr graph --format html` draws it (a
    notebook shows it inline; `.save(path)` writes the page)."""
    prog = program(f, args, kwargs)
    extra = ["--open-depth", str(open_depth)] if open_depth is not None else []
    done, _ = run_on(["graph", "--format", "html", *extra], [(prog.name, prog.text)], after=["-o", "-"])
    if done.returncode != 0:
        raise JaxprError(f"jaxpr graph failed (exit {done.returncode}): {done.stderr.strip()}")
    return Graph(done.stdout, prog)


def diff(f: Any, g: Any, *args: Any, **kwargs: Any) -> Diff:
    """`jaxpr diff` of `f` and `g` traced on the same arguments (or of two
    jaxprs): what changed, up to variable names."""
    a = program(f, args, kwargs)
    b = program(g, args, kwargs)
    names = (a.name, b.name) if a.name != b.name else (a.name + "_a", b.name + "_b")
    texts = [(names[0], a.text), (names[1], b.text)]
    done, folder = run_on(["diff", "--format", "json"], texts)
    if done.returncode not in (0, 1):
        raise JaxprError(f"jaxpr diff failed (exit {done.returncode}): {done.stderr.strip()}")
    human, folder = run_on(["diff", "--color", "never"], texts)
    text = re.sub(re.escape(folder) + r"\d+" + re.escape(os.sep), "", human.stdout)
    return Diff(json.loads(done.stdout), text, a, b)


def _threefry_partitionable() -> str:
    try:
        import jax

        return "true" if getattr(jax.config, "jax_threefry_partitionable") else "false"
    except (ImportError, AttributeError):
        return "true"


@overload
def build(
    f: Any,
    *args: Any,
    emit: Literal["native"] = ...,
    name: Optional[str] = ...,
    opt: int = ...,
    cpu: str = ...,
    **kwargs: Any,
) -> _native.NativeFunction: ...


@overload
def build(
    f: Any,
    *args: Any,
    emit: Literal["stablehlo"],
    name: Optional[str] = ...,
    opt: int = ...,
    cpu: str = ...,
    **kwargs: Any,
) -> StableHLO: ...


def build(
    f: Any,
    *args: Any,
    emit: str = "native",
    name: Optional[str] = None,
    opt: int = 2,
    cpu: str = "native",
    **kwargs: Any,
) -> Union[_native.NativeFunction, StableHLO]:
    """Builds `f` traced on the arguments (or a jaxpr) as `jaxpr build`:
    `emit="native"` returns a callable over the shared library (numpy and
    JAX arrays in, numpy arrays out, inputs checked), `emit="stablehlo"` the
    module's text. A refused program raises `BuildError` with the
    diagnostics."""
    if emit not in ("native", "stablehlo"):
        raise ValueError(f"emit must be 'native' or 'stablehlo', not {emit!r}")
    prog = program(f, args, kwargs)
    symbol = name or f"jaxpr_{prog.name}"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol):
        raise ValueError(f"name must be a C identifier, not {symbol!r}")
    folder = tempfile.mkdtemp(prefix="jaxpr-build-")
    source = prog.write(Path(folder))
    out = Path(folder) / (f"lib{symbol}.so" if emit == "native" else f"{prog.name}.mlir")
    command = ["build", str(source), "--emit", emit, "-o", str(out), "--format", "json", "--color", "never"]
    command += ["--threefry-partitionable", _threefry_partitionable()]
    if emit == "native":
        command += ["--name", symbol, "-O", str(opt), "--cpu", cpu]
    done = run_in(folder, command)
    if done.returncode != 0:
        diagnostics: List[Diagnostic] = []
        try:
            found = json.loads(done.stdout)["files"][0]["diagnostics"]
            diagnostics = _diagnostics(found, prog, [], folder + os.sep)
        except (ValueError, KeyError, IndexError):
            pass
        shown = "\n".join(f"{d.severity}[{d.code}]: {d.message} (line {d.line})" for d in diagnostics)
        shutil.rmtree(folder, ignore_errors=True)
        raise BuildError(
            f"jaxpr build --emit {emit} refused {prog.name} (exit {done.returncode}):\n"
            + (shown or done.stderr.strip() or done.stdout.strip()),
            diagnostics,
        )
    if emit == "stablehlo":
        text = out.read_text(encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        return StableHLO(text, prog)
    header = out.with_suffix(".h").read_text(encoding="utf-8")
    return _native.NativeFunction(str(out), header, symbol, folder, prog, _native.in_avals(prog), prog.out_tree)
