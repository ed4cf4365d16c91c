"""The values of a closed jaxpr's constants, which JAX prints by name only
(`let inner = { lambda a:f32[3]; b:f32[3]. let ...`), keyed by the names
that printout gives their binders: the file `NAME.constants.json` that
`jaxpr build` reads beside `NAME.jaxpr` (crates/lower/src/constants.rs;
docs/python.md, "Constants").

The Python API (`jaxpr._constants`) and `jaxpr trace`'s capture code, which
embeds this file (crates/session/src/trace.rs), share it: standard library,
numpy and JAX only, no relative imports.
"""

import contextlib
import json
import sys
from typing import Any, Callable, Dict, Iterator, List, Tuple

FORMAT = "jaxpr-constants"
VERSION = 1


@contextlib.contextmanager
def _naming_contexts() -> Iterator[List[Any]]:
    """The naming contexts (`JaxprPpContext`, jax 0.4.30 to 0.10) JAX's
    printer makes while the block runs: each maps the printout's variables
    to the names it gives them (`var_names`, one name per variable of the
    printout, nested jaxprs included)."""
    made: List[Any] = []
    try:
        from jax._src import core
    except ImportError:
        yield made
        return
    cls = getattr(core, "JaxprPpContext", None)
    if cls is None:
        yield made
        return
    init = cls.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    cls.__init__ = recording
    try:
        yield made
    finally:
        cls.__init__ = init


def printed(closed: Any, print_text: Callable[[], str]) -> Tuple[str, Dict[str, Any]]:
    """`print_text()` (a printout of `closed`) and the values of `closed`'s
    constants, nested ones included, by the names that printout gives
    them."""
    with _naming_contexts() as contexts:
        text = print_text()
    return text, values(closed, contexts)


def _array(x: Any) -> Any:
    """`x` as the file records it (`dtype`, `shape`, `hex`: its elements'
    little-endian bytes, row-major), or None for what is not a plain array
    (a typed PRNG key: refused by the build as if not recorded)."""
    import numpy as np

    try:
        a = np.asarray(x)
    except Exception:
        return None
    if a.dtype.kind not in "biufc" and a.dtype.name != "bfloat16":
        return None
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("<"))
    return {"dtype": a.dtype.name, "shape": list(a.shape), "hex": np.ascontiguousarray(a).tobytes().hex()}


def _nested(value: Any) -> Iterator[Any]:
    """The jaxprs (closed or not) a parameter's value holds."""
    if hasattr(value, "eqns") or (hasattr(value, "jaxpr") and hasattr(value, "consts")):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _nested(v)


def values(closed: Any, contexts: List[Any]) -> Dict[str, Any]:
    """The constants of `closed` and of every closed jaxpr in its
    equations' parameters, by the names `contexts` gave their binders (one
    printed as `_` or not printed is left out)."""
    found: Dict[str, Any] = {}

    def name_of(v: Any) -> Any:
        for c in contexts:
            names = getattr(c, "var_names", {})
            if v in names:  # a defaultdict: `in` does not name it
                return names[v]
        return None

    def record(jaxpr: Any, consts: Any, nested: bool) -> None:
        for v, x in zip(jaxpr.constvars, consts):
            name = name_of(v)
            if name is None or name == "_" or name in found:
                continue
            entry = _array(x)
            if entry is not None:
                entry["nested"] = nested
                found[name] = entry

    seen = set()

    def walk(jaxpr: Any) -> None:
        if id(jaxpr) in seen:
            return
        seen.add(id(jaxpr))
        for eqn in jaxpr.eqns:
            for param in eqn.params.values():
                for sub in _nested(param):
                    if hasattr(sub, "consts"):
                        record(sub.jaxpr, sub.consts, True)
                        walk(sub.jaxpr)
                    else:
                        walk(sub)

    top = getattr(closed, "jaxpr", closed)
    record(top, getattr(closed, "consts", ()), False)
    walk(top)
    return found


def document(constants: Dict[str, Any]) -> Dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "constants": constants}


def write(path: Any, constants: Dict[str, Any]) -> None:
    """Writes the file `jaxpr build` reads beside a jaxpr file."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document(constants), fh, separators=(",", ":"), sort_keys=True)
