"""What a printed jaxpr lacks, recorded from the live program beside its
text, in the file `NAME.recorded.json` that `jaxpr build` reads beside
`NAME.jaxpr` (crates/lower/src/recorded.rs; docs/python.md, "Recorded
beside the text"):

- the values of the closed jaxprs' constants, which JAX prints by name only
  (`let inner = { lambda a:f32[3]; b:f32[3]. let ...`), keyed by the names
  that printout gives their binders;
- each Pallas kernel's grid and the block its index maps select at every
  grid point (jax >= 0.6 prints a `BlockMapping` without its index map),
  keyed by the name of the kernel jaxpr's first binder;
- what reference accesses print without: a slice's stride (`pl.ds(start,
  size, stride)` prints as `start:start+size`) and the mask of a Pallas
  store whose result is unused (printed `x[...] <- v`), for each access
  that has one (`accesses`; a program with no reference access records
  none, and then the build reads the text alone);
- the meaning of a library primitive that its library lowers as its own
  Python implementation (equinox's `create_vprim`, whose lowering is
  `mlir.lower_fun(impl)`: lineax's `linear_solve`, whose parameters print
  the solver and operator as Python objects): that implementation traced by
  JAX at the equation's operand types, printed with names of its own and
  with its constants' values (`implementations`, keyed by the name of the
  equation's first named result).

The Python API (`jaxpr._constants`) and `jaxpr trace`'s capture code, which
embeds this file (crates/session/src/trace.rs), share it: standard library,
numpy and JAX only, no relative imports.
"""

import contextlib
import json
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

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


# (constants, kernels, accesses, implementations).
Recorded = Tuple[Dict[str, Any], Dict[str, Any], Optional[List[Dict[str, Any]]], Dict[str, Any]]
# What a program given as text records: nothing.
NOTHING: Recorded = ({}, {}, None, {})


def printed(closed: Any, print_text: Callable[[], str]) -> Tuple[str, Recorded]:
    """`print_text()` (a printout of `closed`), and what `write` records
    beside it: the values of `closed`'s constants, nested ones included,
    its kernels' blocks, its reference accesses' strides and unprinted
    masks and its library primitives' implementations, by the names that
    printout gives their variables."""
    with _naming_contexts() as contexts:
        text = print_text()
    return text, (values(closed, contexts), kernels(closed, contexts), accesses(closed, contexts),
                  implementations(closed, contexts))


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
# The reference accesses: a state `get`, `swap` and `addupdate` (operands
# the reference, the value of a store, then the indexers' leaves, `tree`),
# and Pallas's loads and stores (`masked_load`/`masked_swap`, `load`/`swap`
# in later versions: all operands under `args_tree`, as (reference,
# indexers, mask, other) and (reference, indexers, value, mask)).
_STATE_ACCESSES = {"get": 0, "swap": 1, "addupdate": 1}
_PALLAS_ACCESSES = {"masked_load": None, "load": None, "masked_swap": 2, "swap": 2}


def _indexers(x: Any) -> Iterator[Any]:
    """The `NDIndexer`s in an access's unflattened operands, in order."""
    if hasattr(x, "indices") and hasattr(x, "shape"):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _indexers(y)
    elif hasattr(x, "indexer"):  # a transform holding an indexer
        yield from _indexers(x.indexer)


def _access(eqn: Any, contexts: List[Any]) -> Optional[Dict[str, Any]]:
    """What `eqn`'s printout lacks if it is a reference access that lacks
    anything (a stride other than 1, a store's mask it does not print),
    keyed by the names of its reference, its result (None when dropped) and
    its stored value (None for a load or a literal); else None."""
    from jax import tree_util

    name = eqn.primitive.name
    tree = eqn.params.get("args_tree")
    value = mask = None
    if tree is not None and name in _PALLAS_ACCESSES:
        try:
            ops = tree_util.tree_unflatten(tree, eqn.invars)
        except Exception:
            return None
        at = _PALLAS_ACCESSES[name]
        if at is not None:
            value = ops[at]
            mask = ops[3] if len(ops) > 3 else None
        leaves = ops[1]
    elif name in _STATE_ACCESSES and "tree" in eqn.params:
        at = _STATE_ACCESSES[name]
        first = 2 if at else 1
        try:
            leaves = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars[first:])
        except Exception:
            return None
        value = eqn.invars[at] if at else None
    else:
        return None
    strides = [[int(getattr(i, "stride", 1) or 1) for i in ix.indices] for ix in _indexers(leaves)]
    dropped = type(eqn.outvars[0]).__name__ == "DropVar" if eqn.outvars else True
    # JAX prints a store's mask unless its result is dropped.
    unprinted_mask = mask is not None and dropped
    if all(s == 1 for ix in strides for s in ix) and not unprinted_mask:
        return None
    entry: Dict[str, Any] = {
        "ref": _name_of(contexts, eqn.invars[0]),
        "out": None if dropped else _name_of(contexts, eqn.outvars[0]),
        "value": _name_of(contexts, value) if hasattr(value, "aval") and not hasattr(value, "val") else None,
        "strides": strides,
    }
    if unprinted_mask:
        # A literal mask has no name: None, and the build refuses it.
        entry["mask"] = _name_of(contexts, mask) if not hasattr(mask, "val") else None
    return entry


def accesses(closed: Any, contexts: List[Any]) -> Optional[List[Dict[str, Any]]]:
    """What the printout of `closed` lacks of its reference accesses
    (`_access`), in printing order; None if it has no reference access
    (nothing to record)."""
    found: List[Dict[str, Any]] = []
    any_access = False
    for jaxpr, _ in _jaxprs(closed):
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if name not in _STATE_ACCESSES and name not in _PALLAS_ACCESSES:
                continue
            any_access = True
            entry = _access(eqn, contexts)
            if entry is not None:
                found.append(entry)
    return found if any_access else None


def _lowered_as_implementation() -> Any:
    """The primitives a library lowers as their Python implementation:
    equinox's `create_vprim` registers each (`_vprim_impl_registry`) with
    `mlir.lower_fun(impl)` as its lowering. Empty when equinox is not
    imported."""
    module = sys.modules.get("equinox.internal._primitive")
    return getattr(module, "_vprim_impl_registry", None) or {}


def implementations(closed: Any, contexts: List[Any]) -> Dict[str, Any]:
    """The implementation of each equation of `closed` whose primitive its
    library lowers as its Python implementation (`_implementation`), by
    the name `contexts` gave its first named result (an equation with none
    is read nowhere and left out)."""
    lowered = _lowered_as_implementation()
    found: Dict[str, Any] = {}
    if not lowered:
        return found
    for jaxpr, _ in _jaxprs(closed):
        for eqn in jaxpr.eqns:
            if eqn.primitive not in lowered:
                continue
            names = [_name_of(contexts, v) for v in eqn.outvars]
            name = next((n for n in names if n not in (None, "_")), None)
            if name is None or name in found:
                continue
            entry = _implementation(eqn)
            if entry is not None:
                found[name] = entry
    return found


def _implementation(eqn: Any) -> Optional[Dict[str, Any]]:
    """`eqn`'s primitive's implementation traced by JAX at its operand
    types (as `mlir.lower_fun` traces it to lower the equation), printed
    without `let`s and with names of its own, and its constants' values by
    those names; None when JAX cannot trace it alone or it does not give
    the equation's result types."""
    try:
        import jax
        from jax._src import core

        prim = eqn.primitive
        bound = prim.get_bind_params(eqn.params)
        # jax < 0.9.2 returns (subfuns, params); later releases the params.
        subfuns, params = bound if isinstance(bound, tuple) else ([], bound)
        if subfuns:
            return None
        # jax annotates ShapeDtypeStruct's constructor in some releases only.
        specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype)  # type: ignore[no-untyped-call,unused-ignore]
                 for v in eqn.invars]

        def run(*xs: Any) -> List[Any]:
            out = prim.impl(*xs, **params)
            return list(out) if prim.multiple_results else [out]

        traced = jax.make_jaxpr(run)(*specs)
        given = [(tuple(o.aval.shape), o.aval.dtype) for o in traced.jaxpr.outvars]
        if given != [(tuple(v.aval.shape), v.aval.dtype) for v in eqn.outvars]:
            return None
        # `pp_jaxpr` with a context of its own: no jaxpr is named apart, and
        # every variable gets a name (none is printed `_`).
        context = core.JaxprPpContext()
        text = core.pp_jaxpr(traced.jaxpr, context, core.JaxprPpSettings()).format()
    except Exception:  # the implementation cannot be traced alone here
        return None
    constants = values(traced, [context])
    for entry in constants.values():
        entry.pop("nested", None)
    return {"primitive": prim.name, "text": text, "constants": constants}


def document(recorded: Recorded) -> Dict[str, Any]:
    constants, kernels, accessed, implemented = recorded
    doc = {"format": FORMAT, "version": VERSION, "constants": constants, "kernels": kernels}
    if accessed is not None:
        doc["accesses"] = accessed
    if implemented:
        doc["implementations"] = implemented
    return doc


def anything(recorded: Recorded) -> bool:
    """Whether `recorded` holds anything to write."""
    constants, kernels, accessed, implemented = recorded
    return bool(constants or kernels or implemented) or accessed is not None


def write(path: Any, recorded: Recorded) -> None:
    """Writes the file `jaxpr build` reads beside a jaxpr file."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(document(recorded), fh, separators=(",", ":"), sort_keys=True)
