"""Writes tests/data/catalyst-suite/: for every program of programs.py, NAME.jaxpr (the jaxpr as
Catalyst prints it) and NAME.json (the values Catalyst computes, and the in_type/out_type of every
jaxpr in it as Catalyst's own type rules compute them: how each is obtained is said at the top of
`record.py`).

usage: python gen.py OUTDIR [--allow-skips] [NAME ...]   (pennylane-catalyst 0.15.0, jax 0.7.1)

Any program Catalyst rejects fails the run, unless `--allow-skips` (an older Catalyst of the
version matrix, tests/data/versions/catalyst-VERSION): then it is listed, with Catalyst's
error, in OUTDIR/skipped.json.
"""
import json
import os
import sys

import jax

import catalyst

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (patches qjit before any program is decorated)
import programs  # noqa: E402


def main():
    out = sys.argv[1]
    allow_skips = "--allow-skips" in sys.argv[2:]
    only = set(sys.argv[2:]) - {"--allow-skips"}
    os.makedirs(out, exist_ok=True)
    failed = dict(programs.SKIPPED)
    for name, why in failed.items():
        print(name, "FAILED:", why, flush=True)
    for name, (fn, examples) in programs.PROGRAMS.items():
        if only and name not in only:
            continue
        try:
            write_case(out, name, fn, examples)
        except Exception as e:  # report every program Catalyst rejects, then fail
            failed[name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            print(name, "FAILED:", failed[name], flush=True)
    if allow_skips:
        producer = f"pennylane-catalyst {catalyst.__version__} (jax {jax.__version__})"
        with open(f"{out}/skipped.json", "w") as f:
            json.dump({"producer": producer, "skipped": failed}, f, indent=1, sort_keys=True)
            f.write("\n")
    elif failed:
        sys.exit(f"Catalyst failed on {sorted(failed)}")


def write_case(out, name, fn, examples):
    record.write_case(out, name, fn, examples, quantum=name in programs.QUANTUM,
                      program=f"corpus-gen/catalyst/programs.py:{name}")
    print(name, "ok", flush=True)


if __name__ == "__main__":
    main()
