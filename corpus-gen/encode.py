"""How both corpus generators write a value (the format of
`shared/corpus/README.md`): `{"dtype", "shape", "data"}`, data flattened
row-major; booleans and integers as JSON's; floats as numbers, except NaN and
the infinities, which are the strings "nan", "inf", "-inf" (JSON has no such
numbers); complex values as `[re, im]`, each part a float as above.

Standard library and numpy only: the JAX generator (jax 0.10.2) and the
Catalyst generator (Catalyst's jax 0.7.1) run in different venvs and import
this file by path.
"""
import numpy as np


def number(v):
    """A float as the corpus writes it."""
    v = float(v)
    return "nan" if np.isnan(v) else "inf" if v == np.inf else "-inf" if v == -np.inf else v


def array(x):
    """A numpy array (or anything `np.asarray` takes) as the corpus writes it."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    if x.dtype == np.bool_:
        data = [bool(v) for v in flat]
    elif np.issubdtype(x.dtype, np.integer):
        data = [int(v) for v in flat]
    elif np.issubdtype(x.dtype, np.complexfloating):
        data = [[number(v.real), number(v.imag)] for v in flat.astype(np.complex128)]
    else:
        data = [number(v) for v in flat.astype(np.float64)]
    return {"dtype": str(x.dtype), "shape": list(x.shape), "data": data}


def write_column(out, producer, manifest, skipped, values):
    """A column's `manifest.json` (`producer`, `programs`, `skipped`) and
    `values.json.gz` (gzip without a timestamp, so reruns are byte-equal)."""
    import gzip, json, os
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump({"producer": producer, "programs": manifest, "skipped": skipped},
                  fh, indent=1, sort_keys=True)
        fh.write("\n")
    text = json.dumps(values, separators=(",", ":"), sort_keys=True).encode()
    with open(os.path.join(out, "values.json.gz"), "wb") as fh:
        fh.write(gzip.compress(text, mtime=0))
