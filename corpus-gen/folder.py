"""What the corpus generators that record their own programs share
(`builds/gen.py`, `ecosystem/gen.py`): a program with the inputs its values
are computed at, tracing it as a user prints it, and writing a folder in the
format of tests/data/jax-suite (corpus-gen/jax/README.md): NAME.jaxpr,
manifest.json and values.json.gz (written with a zero mtime, so regenerating
gives the same bytes).

Imports JAX lazily: each generator runs in its own venv and imports this file
by path.
"""
import gzip, importlib.util, json, os

import encode


class Program:
    """`fn` at `args`. With `poly` (jax.export shape specs, one per argument),
    printed traced at those symbolic shapes and computed at `args`. A program
    whose inputs and outputs are not all plain arrays (keys, objects, a
    pytree holding something else) sets `build=False`: its jaxpr is written,
    no values. `threefry_partitionable` is the `jax_threefry_partitionable`
    it is traced and computed with (None: this JAX's default); the manifest
    records the one used, which the build needs (the text does not say)."""
    def __init__(self, name, fn, args, source, poly=None, build=True, threefry_partitionable=None):
        self.name, self.fn, self.args, self.source, self.poly = name, fn, list(args), source, poly
        self.build = build
        self.threefry_partitionable = threefry_partitionable


_DEFAULT_PARTITIONABLE = []


def load(path, name):
    """The Python module at `path` (another generator's), as `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def partitionable(p):
    """Sets and returns the `jax_threefry_partitionable` `p` runs with."""
    import jax
    if not _DEFAULT_PARTITIONABLE:
        _DEFAULT_PARTITIONABLE.append(jax.config.jax_threefry_partitionable)
    on = _DEFAULT_PARTITIONABLE[0] if p.threefry_partitionable is None else p.threefry_partitionable
    jax.config.update("jax_threefry_partitionable", on)
    return on


def trace(p):
    """The closed jaxpr of `p` as `jax.make_jaxpr` gives it, at `p.poly`'s
    symbolic shapes when it has them; JAX's own `check_jaxpr` must accept it."""
    import jax
    from jax._src import core
    partitionable(p)
    if p.poly is not None:
        from jax import export
        cj = jax.make_jaxpr(p.fn)(*export.symbolic_args_specs(p.args, p.poly))
    else:
        cj = jax.make_jaxpr(p.fn)(*p.args)
    core.check_jaxpr(cj.jaxpr)
    return cj


def entry(p, cj):
    """The manifest's entry of a traced program."""
    return {"source": p.source, "check_jaxpr": True, "num_consts": len(cj.consts),
            "symbolic": p.poly, "constraints": None,
            "threefry_partitionable": partitionable(p)}


def values(p, cj):
    """JAX's values of `p` (`jax.jit(p.fn)(*p.args)`, as a user runs it): one
    example, inputs the jaxpr's constants then the arguments' leaves."""
    import jax
    import jax.numpy as jnp
    partitionable(p)
    outs = jax.tree_util.tree_leaves(jax.jit(p.fn)(*p.args))
    # A Python scalar among the arguments (a TrainState's `step`) has the
    # dtype JAX gives it, as the jaxpr declares it.
    inputs = list(cj.consts) + [jnp.asarray(a) for a in jax.tree_util.tree_leaves(p.args)]
    return [{"inputs": [encode.array(a) for a in inputs],
             "outputs": [encode.array(o) for o in outs]}]


def write(out, producer, manifest, values_by_name, texts, extra=None):
    """Writes folder `out` anew: `texts` (name -> jaxpr text), manifest.json
    (`producer`, `manifest`'s entries, and `extra`'s keys beside them) and
    values.json.gz."""
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    for name, text in texts.items():
        with open(os.path.join(out, name + ".jaxpr"), "w") as fh:
            fh.write(text + "\n")
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump({"producer": producer, "programs": manifest, **(extra or {})},
                  fh, indent=1, sort_keys=True)
        fh.write("\n")
    text = json.dumps(values_by_name, separators=(",", ":"), sort_keys=True).encode()
    with open(os.path.join(out, "values.json.gz"), "wb") as fh:
        fh.write(gzip.compress(text, mtime=0))
