"""What the commands answer, as Python objects (with plain-text and HTML
renderings for notebooks)."""

from __future__ import annotations

import dataclasses
import html
import json
import os
from typing import Any, Dict, List, Optional, Set

from ._program import Program, PythonLocation


@dataclasses.dataclass(frozen=True)
class Range:
    """1-based lines and columns (columns in characters) in the printed jaxpr."""

    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def of(cls, r: Dict[str, Any]) -> "Range":
        return cls(r["start"]["line"], r["start"]["column"], r["end"]["line"], r["end"]["column"])


@dataclasses.dataclass(frozen=True)
class Related:
    message: str
    range: Range
    path: str


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding of `jaxpr check`, as its `--format json` reports it."""

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
    related: List[Related] = dataclasses.field(default_factory=list)
    python: Optional[PythonLocation] = None  # the user's line, where JAX recorded it
    rendered: str = ""  # as `jaxpr check` prints it: the source with carets

    @property
    def range(self) -> Range:
        return Range(self.line, self.column, self.end_line, self.end_column)

    def __str__(self) -> str:
        if self.rendered:
            return self.rendered
        text = f"{self.severity}[{self.code}]: {self.message}\n  {self.line}:{self.column} | {self.source_line.strip()}"
        if self.help:
            text += f"\n  help: {self.help}"
        return text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        where = ""
        if self.python is not None:
            where = f'<div class="jaxpr-python-line">from <code>{html.escape(str(self.python))}</code></div>'
        return where + _pre(str(self), self.severity)


def _pre(text: str, severity: str = "") -> str:
    colour = {"error": "#b00020", "warning": "#8a6d00"}.get(severity, "inherit")
    return (
        f'<pre class="jaxpr-diagnostic jaxpr-{severity or "text"}" '
        f'style="border-left:3px solid {colour};padding-left:6px;white-space:pre;overflow-x:auto">'
        f"{html.escape(text)}</pre>"
    )


class Report(List[Diagnostic]):
    """The diagnostics of `check`: a list of `Diagnostic`, printed as the
    CLI prints them (and drawn so in a notebook)."""

    program: Program
    summary: str

    def __init__(self, diagnostics: List[Diagnostic], program: Program, summary: str = ""):
        super().__init__(diagnostics)
        self.program = program
        self.summary = summary

    @property
    def errors(self) -> List[Diagnostic]:
        return [d for d in self if d.severity == "error"]

    @property
    def warnings(self) -> List[Diagnostic]:
        return [d for d in self if d.severity == "warning"]

    def __str__(self) -> str:
        return "\n\n".join(str(d) for d in self) + ("\n\n" if len(self) else "") + self.summary

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        parts = [d._repr_html_() for d in self]
        parts.append(f"<p><code>{html.escape(self.summary)}</code></p>")
        return "\n".join(parts)


@dataclasses.dataclass(frozen=True)
class Signature:
    what: str  # "main jaxpr", "body_jaxpr of `for_loop` at 2:24", ...
    line: int
    column: int
    in_type: str  # "((i64[], False), (f64[DBIdx(0)], True))"
    out_type: str

    def __str__(self) -> str:
        return f"{self.line}:{self.column}: {self.what}\n  in_type:  {self.in_type}\n  out_type: {self.out_type}"


@dataclasses.dataclass(frozen=True)
class Cost:
    flops: int
    transcendentals: int
    bytes_accessed: int
    communicated_bytes: int

    @classmethod
    def of(cls, d: Dict[str, Any]) -> "Cost":
        return cls(int(d["flops"]), int(d["transcendentals"]), int(d["bytes_accessed"]), int(d["communicated_bytes"]))


class Stats:
    """`jaxpr stats --format json` of one program: totals, equations by
    primitive, each jaxpr's cost and peak live bytes, the most expensive
    equations, totals per Python line and the collectives per device."""

    def __init__(self, data: Dict[str, Any], program: Program, table: str):
        self.data = data
        self.program = program
        self.table = table  # `jaxpr stats`'s own table

    @property
    def total(self) -> Cost:
        return Cost.of(self.data["total"])

    @property
    def flops(self) -> int:
        return self.total.flops

    @property
    def peak_bytes(self) -> int:
        return int(self.data["peak_bytes"])

    @property
    def equations(self) -> int:
        return int(self.data["equations"])

    @property
    def by_primitive(self) -> Dict[str, int]:
        return dict(self.data["by_primitive"])

    @property
    def collectives(self) -> List[Dict[str, Any]]:
        return list(self.data["collectives"])

    @property
    def devices(self) -> int:
        return int(self.data["devices"])

    def rows(self) -> List[Dict[str, Any]]:
        """One row per jaxpr (name, line, equations, flops, transcendentals,
        bytes_accessed, communicated_bytes, peak_bytes, peak_line and
        peak_python: the equation where live bytes peak and its Python line)."""
        out = []
        for j in self.data["jaxprs"]:
            row = {"jaxpr": j["name"], "line": j["line"], "equations": j["equations"]}
            row.update({k: int(v) for k, v in j["cost"].items()})
            row["peak_bytes"] = int(j["peak_bytes"])
            row["peak_line"] = j.get("peak_line")
            loc = self.program.python_location(j["peak_line"]) if j.get("peak_line") else None
            row["peak_python"] = str(loc) if loc else None
            out.append(row)
        return out

    def to_dict(self) -> Dict[str, Any]:
        copy: Dict[str, Any] = json.loads(json.dumps(self.data))
        return copy

    def to_dataframe(self, by: str = "jaxpr") -> Any:
        """A pandas DataFrame: one row per jaxpr (`by="jaxpr"`), per Python
        line (`"python_line"`) or per primitive (`"primitive"`)."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]  # pandas ships no annotations
        except ImportError as e:
            raise ImportError("Stats.to_dataframe needs pandas (`pip install pandas`); Stats.to_dict() does not") from e
        if by == "jaxpr":
            return pd.DataFrame(self.rows())
        if by == "python_line":
            return pd.DataFrame(
                [
                    {"source": p["source"], "equations": p["equations"], **{k: int(v) for k, v in p["cost"].items()}}
                    for p in self.data.get("python_lines", [])
                ]
            )
        if by == "primitive":
            return pd.DataFrame(sorted(self.by_primitive.items(), key=lambda kv: -kv[1]), columns=["primitive", "equations"])
        raise ValueError(f"by must be 'jaxpr', 'python_line' or 'primitive', not {by!r}")

    def __str__(self) -> str:
        return self.table

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.table)

    def _repr_html_(self) -> str:
        rows = self.rows()
        cols = ["jaxpr", "line", "equations", "flops", "transcendentals", "bytes_accessed", "peak_bytes", "peak_line", "peak_python"]
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape('' if r.get(c) is None else str(r.get(c)))}</td>" for c in cols) + "</tr>"
            for r in rows
        )
        lines = self.data.get("python_lines") or []
        by_line = ""
        if lines:
            by_line = "<p>by Python line</p><table class=\"jaxpr-stats-lines\"><thead><tr><th>source</th><th>equations</th><th>flops</th><th>transcendentals</th><th>bytes_accessed</th></tr></thead><tbody>" + "".join(
                f"<tr><td>{html.escape(p['source'])}</td><td>{p['equations']}</td><td>{int(p['cost']['flops'])}</td>"
                f"<td>{int(p['cost']['transcendentals'])}</td><td>{int(p['cost']['bytes_accessed'])}</td></tr>"
                for p in lines
            ) + "</tbody></table>"
        t = self.total
        return (
            f'<div class="jaxpr-stats"><p><b>{self.equations}</b> equations, <b>{t.flops:,}</b> FLOPs, '
            f"{t.transcendentals:,} transcendentals, {t.bytes_accessed:,} bytes accessed, "
            f"peak {self.peak_bytes:,} live bytes ({html.escape(str(self.data['counts']))})</p>"
            f'<table class="jaxpr-stats-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{by_line}</div>'
        )


class Graph:
    """The dataflow graph as `jaxpr graph` draws it."""

    def __init__(self, html_page: str, program: Program):
        self.html = html_page  # the self-contained page of `jaxpr graph --format html`
        self.program = program

    def save(self, path: "str | os.PathLike[str]") -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)

    def __str__(self) -> str:
        return self.program.text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.program.text)

    def _repr_html_(self) -> str:
        # The page has its own scripts and styles: an iframe keeps them apart
        # from the notebook's.
        return (
            f'<iframe class="jaxpr-graph" style="width:100%;height:520px;border:1px solid #ccc" '
            f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>'
        )


class Diff:
    """`jaxpr diff` of two programs: `equal`, the changes (as its JSON), and
    the text it prints."""

    def __init__(self, data: Dict[str, Any], text: str, a: Program, b: Program):
        self.data = data
        self.text = text
        self.a = a
        self.b = b

    @property
    def equal(self) -> bool:
        return bool(self.data["equal"])

    @property
    def changes(self) -> List[Dict[str, Any]]:
        return list(self.data["changes"])

    def __bool__(self) -> bool:
        """True when the programs differ (as `diff`'s exit status 1)."""
        return not self.equal

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text)

    def _repr_html_(self) -> str:
        changed_a = {l for c in self.changes if c.get("a") for l in range(c["a"]["start"]["line"], c["a"]["end"]["line"] + 1)}
        changed_b = {l for c in self.changes if c.get("b") for l in range(c["b"]["start"]["line"], c["b"]["end"]["line"] + 1)}

        def column(p: Program, changed: Set[int], colour: str) -> str:
            lines = []
            for i, l in enumerate(p.text.split("\n"), 1):
                style = f' style="background:{colour}"' if i in changed else ""
                lines.append(f"<span{style}>{i:>4} {html.escape(l)}</span>")
            return f'<pre style="margin:0;overflow-x:auto">{chr(10).join(lines)}</pre>'

        verdict = "equal up to variable names" if self.equal else f"{len(self.changes)} changes"
        return (
            f'<div class="jaxpr-diff"><p><b>{html.escape(self.a.name)}</b> vs <b>{html.escape(self.b.name)}</b>: {verdict}</p>'
            '<table style="width:100%;table-layout:fixed"><tr>'
            f'<td style="vertical-align:top">{column(self.a, changed_a, "#fdd")}</td>'
            f'<td style="vertical-align:top">{column(self.b, changed_b, "#dfd")}</td></tr></table>'
            f"<details><summary>as <code>jaxpr diff</code> prints it</summary>{_pre(self.text)}</details></div>"
        )


@dataclasses.dataclass
class StableHLO:
    """`jaxpr build --emit stablehlo`'s module."""

    text: str
    program: Program

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text)

