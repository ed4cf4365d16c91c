"""What a Catalyst program's case records, shared by the suite's generator (`gen.py`) and the
random circuits' (`corpus-gen/circuits_random/random_circuits.py`): NAME.jaxpr (the jaxpr as
Catalyst prints it) and NAME.json (the values Catalyst computes, and the in_type/out_type of every
jaxpr in it as Catalyst's own type rules compute them). Importing it patches qjit to keep the
InputType it traces the main jaxpr with; import it before any program is decorated.

Signatures are recorded from Catalyst, never from this project's tool:
- main jaxpr: in_type is the InputType qjit traced with (the value make_jaxpr2 passes to `annotate`,
  computed by jax's infer_lambda_input_type), out_type is the qjit object's `out_type`.
- body_jaxpr of for_loop / while_loop, branch_jaxprs of cond: out_type is what the primitive's own
  abstract evaluation returns (catalyst.jax_primitives._for_loop_abstract_eval,
  _while_loop_abstract_eval, _cond_abstract_eval: infer_output_type_jaxpr with the primitive's
  expansion strategy; cond's types its first branch, so each branch is put first in turn). In a
  cond branch, InDBIdx counts the predicate first.
- any other nested jaxpr (quantum_kernel's call_jaxpr, grad's jaxpr, ...): out_type is jax's
  _add_implicit_outputs, which typed the jaxpr's explicit results when it was traced.
- nested in_type: jax's _jaxpr_type_to_callable_annotation (a dimension is the DBIdx of its binder's
  position), with the implicit mark infer_input_type_unshared gives (an integer scalar binder that
  is a later binder's dimension is implicit).
"""
import json
import os
import sys

import jax
import numpy as np
from jax._src import core
from jax._src.interpreters import partial_eval as pe

import catalyst
import catalyst.jit
import catalyst.jax_extras.tracing as tracing
from catalyst import jax_primitives as cp

# The encoder both corpus generators share (they run in different venvs).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import encode  # noqa: E402


# record the InputType make_jaxpr2 traces the main jaxpr with
_annotated = []
_annotate = tracing.annotate


def _recording_annotate(f, in_type):
    _annotated.append(in_type)
    return _annotate(f, in_type)


tracing.annotate = _recording_annotate
_capture = catalyst.jit.QJIT.capture


def _recording_capture(self, *args, **kwargs):
    """qjit traces when it is decorated (annotated arguments) or first called: keep the InputType
    of its last trace (the first one it makes: nested qnodes trace after it) on the object."""
    before = len(_annotated)
    result = _capture(self, *args, **kwargs)
    if len(_annotated) > before:
        self.recorded_in_type = _annotated[before]
    return result


catalyst.jit.QJIT.capture = _recording_capture

SHORT = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32", "bool": "bool",
         "complex128": "c128", "complex64": "c64", "uint8": "u8", "int8": "i8", "float16": "f16"}


def render_dim(d):
    if isinstance(d, (int, np.integer)):
        return str(int(d))
    for cls in (core.DBIdx, core.InDBIdx, core.OutDBIdx):
        if isinstance(d, cls):
            return f"{cls.__name__}({d.val})"
    raise TypeError(f"unrendered dimension {d!r}")


def render_aval(a):
    if isinstance(a, (core.ShapedArray, core.DShapedArray)):
        return f"{SHORT[str(a.dtype)]}[{','.join(render_dim(d) for d in a.shape)}]"
    return str(a)


def render_type(t):
    items = [f"({render_aval(a)}, {k})" for a, k in t]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def nested_in_type(jaxpr):
    invars = list(jaxpr.invars)
    pos = {v: i for i, v in enumerate(invars)}
    dims = {d for v in invars for d in getattr(v.aval, "shape", ()) if isinstance(d, core.Var)}
    out = []
    for v in invars:
        a = v.aval
        if isinstance(a, core.DShapedArray):
            a = a.update(shape=tuple(core.DBIdx(pos[d]) if isinstance(d, core.Var) else d
                                     for d in a.shape))
        out.append((a, v not in dims))
    return tuple(out)


def traced_out_type(jaxpr):
    """The OutputType jax gave `jaxpr` when it was traced (a call primitive's staging runs
    _add_implicit_outputs on the traced explicit results): the printed outvars start with the
    implicit results it added, so find the shortest explicit tail it extends back to them
    (the most implicit results)."""
    outvars = list(jaxpr.outvars)
    for n in reversed(range(len(outvars) + 1)):
        expanded, out_type = pe._add_implicit_outputs(jaxpr.replace(outvars=outvars[n:]))
        if list(expanded.outvars) == outvars:
            return out_type
    raise AssertionError("no explicit tail of the outputs gives them back")


ABSTRACT_EVAL = {
    "for_loop": ("body_jaxpr", cp._for_loop_abstract_eval),
    "while_loop": ("body_jaxpr", cp._while_loop_abstract_eval),
    "cond": ("branch_jaxprs", cp._cond_abstract_eval),
}


def nested_signatures(jaxpr, out):
    """Every jaxpr nested in `jaxpr`, in the order they are printed (equations in order, parameters
    sorted by name, each jaxpr before the ones inside it)."""
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        for key in sorted(eqn.params):
            val = eqn.params[key]
            closed = [val] if isinstance(val, (core.ClosedJaxpr, core.Jaxpr)) else (
                [x for x in val if isinstance(x, (core.ClosedJaxpr, core.Jaxpr))]
                if isinstance(val, (list, tuple)) else [])
            for k, cj in enumerate(closed):
                inner = cj.jaxpr if isinstance(cj, core.ClosedJaxpr) else cj
                rule = ABSTRACT_EVAL.get(name)
                if rule and rule[0] == key:
                    params = dict(eqn.params)
                    if name == "cond":
                        # cond's abstract evaluation types branch 0; each branch is typed
                        # by the same rule with it in front.
                        params["branch_jaxprs"] = [val[k]] + [b for i, b in enumerate(val) if i != k]
                    out_type = rule[1](*[v.aval for v in eqn.invars], **params)
                    source = f"{name} abstract evaluation"
                else:
                    out_type = traced_out_type(inner)
                    source = "jax _add_implicit_outputs"
                where = f"{key}[{k}]" if isinstance(val, (list, tuple)) else key
                out.append({"jaxpr": f"{where} of `{name}`", "in_type": render_type(nested_in_type(inner)),
                            "out_type": render_type(out_type), "out_type_from": source})
                nested_signatures(inner, out)
    return out


enc = encode.array


def jaxpr_inputs(fn, args):
    """The values of the jaxpr's own invars: leading implicit dimension arguments, then the arguments."""
    invars = fn.jaxpr.jaxpr.invars
    leaves = jax.tree_util.tree_leaves(args)
    k = len(invars) - len(leaves)
    implicit = {}
    for v, a in zip(invars[k:], leaves):
        for d, size in zip(getattr(v.aval, "shape", ()), np.shape(a)):
            if not isinstance(d, int):
                implicit[d] = size
    vals = [np.asarray(implicit[v], dtype=np.int64) for v in invars[:k]]
    return [enc(x) for x in vals] + [enc(np.asarray(a)) for a in leaves]


def write_case(out, name, fn, examples, quantum, program, source=None):
    """Runs the qjit program `fn` on each example's arguments and writes OUTDIR/NAME.jaxpr and
    NAME.json (`program`: where its source is, `source`: the source itself when it is generated;
    `quantum`: whether it runs a circuit)."""
    exs = []
    for args in examples:
        args = tuple(jax.numpy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
        res = fn(*args)
        exs.append({"args": [enc(a) for a in args], "inputs": jaxpr_inputs(fn, args),
                    "outputs": [enc(o) for o in jax.tree_util.tree_leaves(res)]})
    closed = fn.jaxpr
    main_in = fn.recorded_in_type
    # the recorded main in_type must be the one the nested rule gives for the printed jaxpr
    assert render_type(main_in) == render_type(nested_in_type(closed.jaxpr)), name
    sigs = [{"jaxpr": "main", "in_type": render_type(main_in),
             "out_type": render_type(fn.out_type), "out_type_from": "qjit out_type"}]
    nested_signatures(closed.jaxpr, sigs)
    with open(f"{out}/{name}.jaxpr", "w") as f:
        f.write(str(closed) + "\n")
    meta = {"producer": f"pennylane-catalyst {catalyst.__version__} (jax {jax.__version__})",
            "program": program,
            "quantum": quantum,
            "seed": fn.compile_options.seed,
            "consts": [enc(np.asarray(c)) for c in closed.consts],
            "signatures": sigs, "examples": exs}
    if source is not None:
        meta["source"] = source
    with open(f"{out}/{name}.json", "w") as f:
        json.dump(meta, f, indent=1)

