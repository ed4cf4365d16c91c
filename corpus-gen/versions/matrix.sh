#!/usr/bin/env bash
# Regenerates tests/data/versions: the program set of corpus-gen/versions/gen.py
# printed by every JAX minor, and corpus-gen/catalyst/programs.py by every
# Catalyst release before 0.15 (0.15.0's column is tests/data/catalyst-suite),
# each in the environment tests/trace/venv.sh makes for that version.
#   corpus-gen/versions/matrix.sh            # every column
#   corpus-gen/versions/matrix.sh jax        # the JAX columns only
#   corpus-gen/versions/matrix.sh catalyst   # the Catalyst columns only
set -euo pipefail
cd "$(dirname "$0")/../.."
which=${1:-all}
out=tests/data/versions
# jax.export of jax <= 0.5 imports absl without requiring it.
absl=${CARGO_TARGET_DIR:-target}/versions-absl
if [ ! -d "$absl/absl" ]; then
  python3 -m pip install -q --disable-pip-version-check --target "$absl" absl-py
fi
if [ "$which" != catalyst ]; then
  for v in 0.4.30 0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2; do
    py=$(tests/trace/venv.sh jax "$v")
    PYTHONPATH=$absl JAX_PLATFORMS=cpu "$py" corpus-gen/versions/gen.py "$out"
  done
fi
if [ "$which" != jax ]; then
  for v in 0.10.0 0.12.0 0.13.0 0.14.1; do
    py=$(tests/trace/venv.sh catalyst "$v")
    rm -rf "$out/catalyst-$v"
    JAX_PLATFORMS=cpu "$py" corpus-gen/catalyst/gen.py "$out/catalyst-$v" --allow-skips
  done
fi
