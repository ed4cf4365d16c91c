#!/usr/bin/env bash
# `jaxpr trace` on every version of the matrix: the tests `trace_versions_*`
# of tests/trace.rs, those outside the default run included (jax 0.4.38,
# 0.7.2, 0.8.3, 0.9.2; Catalyst 0.10.0, 0.12.0, 0.13.0, 0.14.1). Each version
# runs a small program with and without `jaxpr trace` and compares them. The
# environments (tests/trace/venv.sh, one per version, ~0.5-1.2 GB and 1.5-5
# minutes of download each) are made once under the cargo target folder and
# kept; they are why these versions are not in the default test run.
#   scripts/trace-matrix.sh            # every version
#   scripts/trace-matrix.sh catalyst   # the tests whose name contains "catalyst"
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --release -p jaxpr --test trace --features trace-matrix -- \
  --test-threads 2 "trace_versions_${1:-}"
