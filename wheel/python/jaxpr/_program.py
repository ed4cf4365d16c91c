"""From what the user holds (a function and example arguments, a
`ClosedJaxpr`, a `jax.stages.Traced`) to the printed jaxpr the CLI reads."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import _recorded
from ._cli import JaxprError

# `# /path/model.py:12:8 (loss)`, the source info JAX prints after an equation.
_SOURCE = re.compile(r"#\s+(?P<file>\S.*?):(?P<line>\d+)(?::(?P<column>\d+))?\s+\((?P<function>[^()]*)\)\s*$")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXPECTED = (
    "expected a jax ClosedJaxpr or Jaxpr (from jax.make_jaxpr), a jax.stages.Traced, "
    "or a function and example arguments; got "
)


@dataclasses.dataclass(frozen=True)
class PythonLocation:
    """Where JAX recorded that an equation came from."""

    file: str
    line: int
    column: Optional[int]
    function: str

    def __str__(self) -> str:
        col = f":{self.column}" if self.column is not None else ""
        return f"{self.file}:{self.line}{col} ({self.function})"


@dataclasses.dataclass
class Program:
    """A jaxpr as text, with what the Python side knows about it."""

    name: str  # a file stem: the function's name
    text: str
    closed: Any = None  # the ClosedJaxpr, when there is one
    out_tree: Any = None  # the outputs' pytree structure (from a function)
    in_tree: Any = None
    source_dir: Optional[Path] = None  # the folder of the user's code (configuration lookup)
    # What the text lacks, recorded from the live program (`_recorded`):
    # the values of the closed jaxprs' constants, nested ones included, by
    # binder name, each Pallas kernel's blocks at every grid point, the
    # strides and masks its reference accesses print without, and what its
    # library primitives compute.
    constants: Dict[str, Any] = dataclasses.field(default_factory=dict)
    kernels: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # None: not recorded (a program without reference accesses, or given
    # as text).
    accesses: Optional[List[Dict[str, Any]]] = None
    # Library primitives lowered as their Python implementation (lineax's
    # `linear_solve`): each traced at its operand types, by the name of its
    # first named result.
    implementations: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def recorded(self) -> _recorded.Recorded:
        return (self.constants, self.kernels, self.accesses, self.implementations)

    def write(self, folder: Path) -> Path:
        """Writes `NAME.jaxpr` into `folder`, and beside it what was
        recorded, which `jaxpr build` reads (`NAME.recorded.json`)."""
        path = folder / f"{self.name}.jaxpr"
        path.write_text(self.text, encoding="utf-8")
        if _recorded.anything(self.recorded):
            _recorded.write(folder / f"{self.name}.recorded.json", self.recorded)
        return path

    def python_location(self, line: int) -> Optional[PythonLocation]:
        """The user's Python line of the equation at `line` (1-based) of the
        printed jaxpr: its source comment, or that of the equation the line
        continues (parameters printed on lines of their own)."""
        lines = self.text.split("\n")
        i = line - 1
        while 0 <= i < len(lines):
            found = _SOURCE.search(lines[i])
            if found:
                return PythonLocation(
                    found["file"],
                    int(found["line"]),
                    int(found["column"]) if found["column"] else None,
                    found["function"],
                )
            stripped = lines[i].rstrip()
            if i != line - 1 and (stripped.endswith("let") or " = " in stripped):
                return None  # the previous equation or the jaxpr's head: no source info here
            i -= 1
        return None


def print_jaxpr(closed_jaxpr: Any) -> str:
    """The jaxpr printed with source info and name stacks, as a tracing
    session prints it (the graph groups equations by them), one equation a
    line (a jaxpr that fits in the width is printed on one line with its
    comments gathered after it, so narrower widths are tried until the
    printer breaks it)."""
    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    printer = getattr(jaxpr, "pretty_print", None)
    if printer is None or not hasattr(jaxpr, "eqns"):
        raise JaxprError(_EXPECTED + type(closed_jaxpr).__name__)
    def pretty(width: int) -> str:
        # Under IPython JAX colours its printout (jax_pprint_use_color).
        try:
            return str(printer(source_info=True, name_stack=True, width=width, use_color=False))
        except TypeError:  # a JAX whose printer takes no use_color
            return _ANSI.sub("", printer(source_info=True, name_stack=True, width=width))

    try:
        text = ""
        for width in (80, 60, 40, 20, 1):
            text = pretty(width)
            first = text.split("\n", 1)[0].rstrip()
            if first.endswith("let") or " let " not in first:
                break
        return text
    except Exception as e:  # the printer of another JAX version
        raise JaxprError(f"this jaxpr cannot be printed by the installed JAX: {type(e).__name__}: {e}") from e


def _printed(closed_jaxpr: Any) -> Tuple[str, _recorded.Recorded]:
    """[`print_jaxpr`], and what it lacks (`_recorded.printed`)."""
    return _recorded.printed(closed_jaxpr, lambda: print_jaxpr(closed_jaxpr))


def _fields(recorded: _recorded.Recorded) -> Dict[str, Any]:
    """`Program`'s fields of what `_recorded.printed` recorded."""
    constants, kernels, accesses, implementations = recorded
    return {"constants": constants, "kernels": kernels, "accesses": accesses,
            "implementations": implementations}


def _source_dir(fn: Any) -> Optional[Path]:
    try:
        path = inspect.getsourcefile(inspect.unwrap(fn))
    except (TypeError, ValueError):
        return None
    return Path(path).parent if path else None


def _name(fn: Any) -> str:
    name = getattr(fn, "__name__", None) or getattr(fn, "fun_name", None) or "jaxpr"
    name = re.sub(r"\W", "_", str(name)).strip("_")
    return name or "jaxpr"


def program(f: Any, args: Tuple[Any, ...] = (), kwargs: Optional[Dict[str, Any]] = None) -> Program:
    """`f` traced on `args` (as `jax.make_jaxpr(f)(*args, **kwargs)`), or
    `f` itself when it is a `ClosedJaxpr`, `Jaxpr`, `jax.stages.Traced` or
    a `Program` (text goes to `check_text`)."""
    kwargs = kwargs or {}
    if isinstance(f, Program):
        return f
    if type(f).__name__ == "Lowered" and hasattr(f, "compiler_ir"):
        raise JaxprError(
            "a jax.stages.Lowered holds StableHLO, not a jaxpr: pass the jax.stages.Traced "
            "(`jax.jit(f).trace(*args)`) or the function and its arguments"
        )
    traced_jaxpr = getattr(f, "jaxpr", None) if type(f).__name__ == "Traced" else None
    if traced_jaxpr is not None:
        out_tree = getattr(f, "out_tree", None)
        in_tree = getattr(f, "in_tree", None)
        text, recorded = _printed(traced_jaxpr)
        return Program(_name(f), text, traced_jaxpr, out_tree, in_tree, **_fields(recorded))
    if hasattr(f, "eqns") or hasattr(getattr(f, "jaxpr", None), "eqns"):
        if args or kwargs:
            raise JaxprError("a jaxpr takes no example arguments: pass a function to trace with them")
        text, recorded = _printed(f)
        return Program("jaxpr", text, f if hasattr(f, "consts") else None, **_fields(recorded))
    if not callable(f):
        raise JaxprError(_EXPECTED + type(f).__name__)
    try:
        import jax
    except ImportError as e:
        raise JaxprError("tracing a function needs JAX (`pip install jax`)") from e
    try:
        closed, shapes = jax.make_jaxpr(f, return_shape=True)(*args, **kwargs)
    except Exception as e:
        raise JaxprError(f"tracing {_name(f)} failed: {type(e).__name__}: {e}") from e
    out_tree = jax.tree_util.tree_structure(shapes)
    in_tree = jax.tree_util.tree_structure((args, kwargs))
    text, recorded = _printed(closed)
    return Program(_name(f), text, closed, out_tree, in_tree, _source_dir(f), **_fields(recorded))


