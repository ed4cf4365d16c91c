#!/usr/bin/env python3
"""Runs many StableHLO modules on XLA's CPU backend in one process (tests/jax_suite.rs).

usage: xla_batch.py JOBS.json RESULTS.jsonl

JOBS.json: {"oracle": DIR, "tolerance": {DTYPE: [RTOL, ATOL]}, "jobs": [{"name", "module",
"examples": [{"inputs", "outputs", "twin"?}]}]}, values as in the corpus (`twin`: the program's
double-precision value per output, or null, for the random programs). Each module is specialised
to its example's shapes and compared with JAX's outputs exactly as the oracle does it
(DIR/xla_run.py: decode, specialise); one process saves XLA's start-up per module.
RESULTS.jsonl gets one line per job: {"name", "verdict": "right" | "wrong" | "error" |
"invalid", "detail"}, flushed as it goes, so a crash still leaves the verdicts before it.
A typed PRNG key (`key<impl>`) is its key data, uint32 words, as the back ends lower it.
"""
import json, os, sys

jobs = json.load(open(sys.argv[1]))
sys.path.insert(0, jobs["oracle"])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy as np  # noqa: E402
import xla_run  # noqa: E402  (configures jax: x64 on)
import jax  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402
from jax._src.interpreters import mlir as jmlir  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402

TOL = jobs["tolerance"]
import xla_values  # noqa: E402
import ml_dtypes  # noqa: E402  (comes with jax)
xla_run.DT["bfloat16"] = ml_dtypes.bfloat16
xla_run.MLIR_T[ml_dtypes.bfloat16] = "bf16"
xla_values.add_complex_types(xla_run)


def decode(v):
    if v["dtype"].startswith("key<"):
        data = np.asarray(v["data"], dtype=np.uint32)
        return data.reshape(list(v["shape"]) + [-1])
    if v["dtype"] in ("complex64", "complex128"):
        pairs = np.asarray([[float(x) for x in p] for p in v["data"]], dtype=np.float64).reshape(-1, 2)
        return (pairs[:, 0] + 1j * pairs[:, 1]).astype(v["dtype"]).reshape(v["shape"])
    return xla_run.decode(v)


def close(g, e, dtype, atol_floor=0.0, twin=None):
    """`g` against JAX's `e`: integers exactly; floats within the dtype's bound or, where the
    example has the program's double-precision `twin`, twice XLA's own distance from it
    (the program's sensitivity to rounding), whichever is larger."""
    if g.shape != e.shape:
        return False
    if e.dtype.kind in "biu":
        return np.array_equal(g, e)
    # The coarser of the two dtypes: a result the program declares `f32` may
    # be recorded as float64 (the generator ran with 64-bit types on).
    rtol, atol = max(TOL[dtype], TOL.get(str(g.dtype), (0, 0)))
    atol = max(atol, atol_floor)
    if e.dtype.kind == "c":
        return close(g.real, e.real, dtype, atol_floor) and close(g.imag, e.imag, dtype, atol_floor)
    g, e = g.astype(np.float64), e.astype(np.float64)
    bound = atol + rtol * np.abs(e)
    if twin is not None:
        t = xla_run.decode(twin).astype(np.float64).reshape(e.shape)
        sensitivity = np.where(np.isfinite(t), 2 * np.abs(e - t), 0.0)
        bound = np.maximum(bound, np.nan_to_num(sensitivity, nan=0.0, posinf=0.0))
    # NaN where JAX has NaN, the same infinities, and finite values within tolerance.
    return bool(np.all(np.where(np.isnan(e), np.isnan(g),
                                np.where(np.isinf(e), g == e, np.abs(g - e) <= bound))))


def run(job, ctx, backend, devs):
    text = open(job["module"]).read()
    try:
        with ctx:
            m = ir.Module.parse(text)
            if not m.operation.verify():
                return "invalid", "module does not verify"
    except Exception as e:  # noqa: BLE001
        return "invalid", str(e)[:600]
    for k, ex in enumerate(job["examples"]):
        inputs = [decode(v) for v in ex["inputs"]]
        expected = [decode(v) for v in ex["outputs"]]
        try:
            got = xla_values.execute(xla_run, ctx, backend, devs, text, inputs, expected)
        except Exception as e:  # noqa: BLE001
            return "error", f"example {k}: {str(e)[:600]}"
        if len(got) != len(expected):
            return "wrong", f"example {k}: {len(got)} results, expected {len(expected)}"
        twins = ex.get("twin") or [None] * len(expected)
        for j, (g, e, v, t) in enumerate(zip(got, expected, ex["outputs"], twins)):
            if not close(g, e, v["dtype"], job.get("atol_floor", 0.0), t):
                return "wrong", (f"example {k} result {j}: got {g.dtype}{list(g.shape)} "
                                 f"{np.array2string(g.ravel()[:6])}, expected {e.dtype}{list(e.shape)} "
                                 f"{np.array2string(e.ravel()[:6])}")
    return "right", ""


def main():
    ctx = jmlir.make_ir_context()
    backend = jax.extend.backend.get_backend("cpu")
    devs = xc.DeviceList(tuple(backend.devices()[:1]))
    with open(sys.argv[2], "w") as out:
        for job in jobs["jobs"]:
            verdict, detail = run(job, ctx, backend, devs)
            out.write(json.dumps({"name": job["name"], "verdict": verdict, "detail": detail}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
