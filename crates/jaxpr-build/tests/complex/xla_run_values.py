#!/usr/bin/env python3
"""Runs a StableHLO module on XLA and compares its results with examples whose
values may be complex: the shared oracle (`xla_run.py`) with complex dtypes.

usage: xla_run_values.py XLA_RUN.py [--rtol R] [--atol A] MODULE.mlir CASE.json [MODULE CASE ...]

XLA_RUN.py is the shared oracle, imported by path: its module loading and shape
specialisation are used as they are. CASE.json is a corpus case
(`examples[K].inputs`, `examples[K].outputs`), complex values as `[re, im]`,
NaN and infinities as the strings "nan", "inf", "-inf". Inexact results
compare with numpy's allclose (for complex values: on the modulus of the
difference), others exactly. Each module gets one verdict line, `PASS
MODULE: ...`, `FAIL MODULE: ...` or `INVALID MODULE: ...`, after the lines of
its failures. Exit status: 0 every module passed, 1 some did not.
"""
import argparse, importlib.util, json, os, sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import xla_values  # noqa: E402


def load_oracle(path):
    spec = importlib.util.spec_from_file_location("xla_run", path)
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    xla_values.add_complex_types(oracle)
    return oracle


def number(x):
    return float(x) if isinstance(x, str) else x


def decode(oracle, v):
    dt = oracle.DT[v["dtype"]]
    data = v["data"] if isinstance(v["data"], list) else [v["data"]]
    if np.dtype(dt).kind == "c":
        data = [complex(number(re), number(im)) for re, im in data]
    else:
        data = [number(x) for x in data]
    return np.asarray(data, dtype=dt).reshape(v["shape"])


def run(oracle, module, case_path, rtol, atol):
    """Runs one module on every example of its case; prints its verdict."""
    jax, xc, jmlir, ir = oracle.jax, oracle.xc, oracle.jmlir, oracle.ir
    case = json.load(open(case_path))
    text = open(module).read()
    ctx = jmlir.make_ir_context()
    try:
        with ctx:
            if not ir.Module.parse(text).operation.verify():
                raise ValueError("module does not verify")
    except Exception as e:  # noqa: BLE001
        print(f"INVALID {module}: {str(e)[:2000]}")
        return False
    backend = jax.extend.backend.get_backend("cpu")
    devs = xc.DeviceList(tuple(backend.devices()[:1]))
    failed = 0
    for k, ex in enumerate(case["examples"]):
        inputs = [decode(oracle, v) for v in ex["inputs"]]
        expected = [decode(oracle, v) for v in ex["outputs"]]
        try:
            got = xla_values.execute(oracle, ctx, backend, devs, text, inputs, expected)
        except Exception as e:  # noqa: BLE001
            print(f"ERROR {module} example {k}: {str(e)[:2000]}")
            failed += 1
            continue
        if len(got) != len(expected):
            print(f"ERROR {module} example {k}: {len(got)} results, expected {len(expected)}")
            failed += 1
            continue
        for j, (g, e) in enumerate(zip(got, expected)):
            if e.dtype.kind in "biu":
                ok = g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e)
            else:
                wide = np.complex128 if e.dtype.kind == "c" else np.float64
                ok = g.dtype == e.dtype and g.shape == e.shape and np.allclose(
                    g.astype(wide), e.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
            if not ok:
                print(f"ERROR {module} example {k} result {j}: got {g.dtype}{list(g.shape)} "
                      f"{np.array2string(g.ravel()[:8])}, expected {e.dtype}{list(e.shape)} "
                      f"{np.array2string(e.ravel()[:8])}")
                failed += 1
    verdict = "PASS" if not failed else "FAIL"
    print(f"{verdict} {module}: {len(case['examples'])} example(s), {failed} failure(s)")
    return not failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("oracle")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("pairs", nargs="+", help="MODULE CASE, repeated")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        ap.error("modules and cases come in pairs")
    oracle = load_oracle(a.oracle)
    ok = True
    for module, case in zip(a.pairs[::2], a.pairs[1::2]):
        ok = run(oracle, module, case, a.rtol, a.atol) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
