"""Running the `jaxpr` executable installed with this package."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union


class JaxprError(Exception):
    """The value cannot be handled: not a function/jaxpr this package can
    trace or print, or the `jaxpr` executable failed."""


def binary() -> str:
    """The `jaxpr` executable: `$JAXPR_BIN`, else the one installed with this
    package (the environment's scripts folder), else the first on PATH."""
    given = os.environ.get("JAXPR_BIN")
    if given:
        return given
    name = "jaxpr.exe" if sys.platform == "win32" else "jaxpr"
    here = Path(__file__).resolve()
    # site-packages/jaxpr/_cli.py -> <prefix>/bin (or Scripts).
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


def run_on(args: Sequence[str], texts: Sequence[Tuple[str, str]], *, after: Sequence[str] = ()) -> Tuple[subprocess.CompletedProcess[str], str]:
    """Runs `jaxpr ARGS FILES... AFTER` on texts written as files named
    `name.jaxpr` in a fresh folder; returns the process and the folder's path
    with a trailing separator (to strip from messages)."""
    with tempfile.TemporaryDirectory(prefix="jaxpr-") as d:
        paths = []
        for i, (name, text) in enumerate(texts):
            sub = Path(d) / str(i) if len(texts) > 1 else Path(d)
            sub.mkdir(exist_ok=True)
            path = sub / f"{name}.jaxpr"
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        try:
            done = subprocess.run(
                [binary(), *args, *paths, *after],
                capture_output=True,
                text=True,
                timeout=3600,
                stdin=subprocess.DEVNULL,
                cwd=d,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise JaxprError(f"`jaxpr {args[0]}` could not run: {e}") from e
        return done, d + os.sep


def run_in(folder: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [binary(), *args], capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL, cwd=folder
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise JaxprError(f"`jaxpr {args[0]}` could not run: {e}") from e


_TOOL_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*jaxpr\s*[\].]", re.M)


def find_config(start: Optional[Path]) -> Optional[Path]:
    """The configuration the CLI would read for a file in `start`: the
    nearest `jaxpr.toml`, or `pyproject.toml` with `[tool.jaxpr]`, above it
    (a `jaxpr.toml` first in the same folder), as README.md, "Choosing
    rules", says; else the one above the working directory (a notebook's
    cells are compiled to files in a temporary folder, and a library's
    functions live in site-packages). The checked text lives in a temporary
    folder, so the folder of the user's code is searched here and passed as
    `--config`."""
    for origin in ([start] if start else []) + [Path.cwd()]:
        folder = origin.resolve()
        for d in (folder, *folder.parents):
            own = d / "jaxpr.toml"
            if own.is_file():
                return own
            py = d / "pyproject.toml"
            try:
                if py.is_file() and _TOOL_TABLE.search(py.read_text(encoding="utf-8")):
                    return py
            except OSError:
                pass
    return None


def rule_args(
    select: Optional[Sequence[str]] = None,
    ignore: Optional[Sequence[str]] = None,
    warn: Optional[Sequence[str]] = None,
    error: Optional[Sequence[str]] = None,
    config: Union[None, bool, str, "os.PathLike[str]"] = None,
    near: Optional[Path] = None,
) -> List[str]:
    """`jaxpr check`'s rule options; `config=None` (or True) finds the configuration
    above `near` (the user's source file's folder, else the working
    directory), `config=False` reads none."""
    args: List[str] = []
    for flag, rules in (("--select", select), ("--ignore", ignore), ("--warn", warn), ("--error", error)):
        if rules is None:
            continue
        if isinstance(rules, str):
            rules = [rules]
        args += [flag, ",".join(rules)]
    if config is None or config is True:
        found = find_config(near)
        if found is not None:
            args += ["--config", str(found)]
    elif config is not False:
        args += ["--config", str(Path(config).resolve())]
    return args
