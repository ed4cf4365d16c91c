"""The pytest plugin, registered by the wheel (`pytest11` entry point
`jaxpr`): with the package installed, every test session has

- the `jaxpr_assert` fixture: `assert_valid`, `assert_cost`,
  `assert_no_key_reuse`, `assert_collectives` (from `jaxpr.testing`) with
  the rule options of the test's `jaxpr_rules` marker and `--jaxpr-config`;
- the marker `@pytest.mark.jaxpr_rules(select=..., ignore=..., warn=..., error=...)`;
- the option `--jaxpr-config PATH`: the rule configuration of every check
  (default: the nearest `jaxpr.toml`/`pyproject.toml` above the code);
- the `jaxpr` executable's version in the session's header.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict
import subprocess

import pytest

from . import testing
from ._cli import binary


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("jaxpr")
    group.addoption(
        "--jaxpr-config",
        default=None,
        help="rule configuration (jaxpr.toml, or pyproject.toml with [tool.jaxpr]) for the jaxpr_assert fixture",
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "jaxpr_rules(select=None, ignore=None, warn=None, error=None): rule options of jaxpr_assert's checks",
    )


def pytest_report_header(config: Any) -> str:
    try:
        done = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=30)
        return f"jaxpr: {done.stdout.strip()} ({binary()})"
    except Exception as e:  # the header must never stop the session
        return f"jaxpr: not runnable ({e})"


class Assertions:
    """`jaxpr.testing`'s assertions with the test's rule options."""

    def __init__(self, options: Dict[str, Any]):
        self.options = options
        self.assert_valid = functools.partial(self._with_rules, testing.assert_valid)
        self.assert_cost = testing.assert_cost
        self.assert_no_key_reuse = testing.assert_no_key_reuse
        self.assert_collectives = testing.assert_collectives

    def _with_rules(self, assertion: Callable[..., None], f: Any, *args: Any, **kwargs: Any) -> None:
        return assertion(f, *args, **{**self.options, **kwargs})


@pytest.fixture  # type: ignore[untyped-decorator,unused-ignore]  # untyped where pytest is not installed
def jaxpr_assert(request: Any) -> Assertions:
    options = {}
    marker = request.node.get_closest_marker("jaxpr_rules")
    if marker is not None:
        options.update({k: v for k, v in marker.kwargs.items() if k in ("select", "ignore", "warn", "error")})
    path = request.config.getoption("--jaxpr-config")
    if path:
        options["config"] = path
    return Assertions(options)
