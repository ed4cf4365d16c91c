"""What a printed jaxpr lacks, recorded from the live program beside its
text, in the file `NAME.recorded.json` that `jaxpr build` reads beside
`NAME.jaxpr` (crates/lower/src/recorded.rs; docs/python.md, "Recorded
beside the text"):

- the values of the closed jaxprs' constants, which JAX prints by name only
  (`let inner = { lambda a:f32[3]; b:f32[3]. let ...`), keyed by the names
  that printout gives their binders;
- each Pallas kernel's grid and the block its index maps select at every
  grid point (jax >= 0.6 prints a `BlockMapping` without its index map),
  keyed by the name of the kernel jaxpr's first binder.

The Python API (`jaxpr._constants`) and `jaxpr trace`'s capture code, which
embeds this file (crates/session/src/trace.rs), share it: standard library,
numpy and JAX only, no relative imports.
"""

import contextlib
import json
import sys
from typing import Any, Callable, Dict, Iterator, List, Tuple

FORMAT = "jaxpr-recorded"
# At most this many grid points are recorded (a build unrolls the grid and
# refuses more: MAX_GRID_POINTS in crates/lower/src/discharge.rs).
MAX_GRID_POINTS = 4096
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


def printed(closed: Any, print_text: Callable[[], str]) -> Tuple[str, Dict[str, Any], Dict[str, Any]]:
    """`print_text()` (a printout of `closed`), the values of `closed`'s
    constants, nested ones included, and its kernels' blocks, by the names
    that printout gives their binders."""
    with _naming_contexts() as contexts:
        text = print_text()
    return text, values(closed, contexts), kernels(closed, contexts)


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


def _name_of(contexts: List[Any], v: Any) -> Any:
    """The name the printout gave variable `v`, or None."""
    for c in contexts:
        names = getattr(c, "var_names", {})
        if v in names:  # a defaultdict: `in` does not name it
            return names[v]
    return None


def _jaxprs(closed: Any) -> Iterator[Tuple[Any, Any]]:
    """Every jaxpr of `closed` once, with its constants' values (None for a
    jaxpr that is not closed): `closed` itself, then those in its
    equations' parameters, depth first."""
    seen = set()

    def walk(jaxpr: Any, consts: Any) -> Iterator[Tuple[Any, Any]]:
        if id(jaxpr) in seen:
            return
        seen.add(id(jaxpr))
        yield jaxpr, consts
        for eqn in jaxpr.eqns:
            for param in eqn.params.values():
                for sub in _nested(param):
                    if hasattr(sub, "consts"):
                        yield from walk(sub.jaxpr, sub.consts)
                    else:
                        yield from walk(sub, None)

    yield from walk(getattr(closed, "jaxpr", closed), getattr(closed, "consts", ()))


def values(closed: Any, contexts: List[Any]) -> Dict[str, Any]:
    """The constants of `closed` and of every closed jaxpr in its
    equations' parameters, by the names `contexts` gave their binders (one
    printed as `_` or not printed is left out)."""
    found: Dict[str, Any] = {}
    top = getattr(closed, "jaxpr", closed)
    for jaxpr, consts in _jaxprs(closed):
        for v, x in zip(jaxpr.constvars, consts or ()):
            name = _name_of(contexts, v)
            if name is None or name == "_" or name in found:
                continue
            entry = _array(x)
            if entry is not None:
                entry["nested"] = jaxpr is not top
                found[name] = entry
    return found


def kernels(closed: Any, contexts: List[Any]) -> Dict[str, Any]:
    """Each `pallas_call`'s grid and the block indices its index maps give
    at every grid point (row-major, the last axis fastest), computed by
    JAX's own evaluation of them, by the name of the kernel jaxpr's first
    binder. A kernel with a grid that is not static, with scalar prefetch
    or with more than MAX_GRID_POINTS points is left out (its build is
    refused, as from the text)."""
    import itertools

    found: Dict[str, Any] = {}
    for jaxpr, _ in _jaxprs(closed):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name != "pallas_call":
                continue
            kernel, gm = eqn.params.get("jaxpr"), eqn.params.get("grid_mapping")
            if kernel is None or gm is None or not getattr(kernel, "invars", None):
                continue
            name = _name_of(contexts, kernel.invars[0])
            grid = tuple(getattr(gm, "grid", ()))
            if name is None or not all(isinstance(g, int) and g > 0 for g in grid):
                continue
            if getattr(gm, "num_scalar_prefetch", 0) or getattr(gm, "num_index_operands", 0):
                continue
            points = 1
            for g in grid:
                points *= g
            if points > MAX_GRID_POINTS:
                continue
            try:
                blocks = [[_block(bm, point) for bm in gm.block_mappings]
                          for point in itertools.product(*(range(g) for g in grid))]
            except Exception:  # an index map JAX cannot evaluate alone here
                continue
            found[name] = {"grid": list(grid), "blocks": blocks}
    return found


def _block(bm: Any, point: Tuple[int, ...]) -> List[int]:
    """The block indices block mapping `bm`'s index map gives at `point`."""
    import numpy as np
    from jax._src import core

    index_map = bm.index_map_jaxpr
    outs = core.eval_jaxpr(index_map.jaxpr, index_map.consts, *(np.int32(i) for i in point))
    return [int(o) for o in outs]
def document(constants: Dict[str, Any], kernels: Dict[str, Any]) -> Dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "constants": constants, "kernels": kernels}


def write(path: Any, constants: Dict[str, Any], kernels: Dict[str, Any]) -> None:
    """Writes the file `jaxpr build` reads beside a jaxpr file."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document(constants, kernels), fh, separators=(",", ":"), sort_keys=True)
