#!/usr/bin/env bash
# Regenerates tests/data/pallas: the programs of corpus-gen/pallas/programs.py
# printed (and run, interpreted on CPU) by every JAX minor, each in the
# environment tests/trace/venv.sh makes for it.
#   corpus-gen/pallas/matrix.sh              # every column
#   corpus-gen/pallas/matrix.sh 0.10.2       # one
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/data/pallas
# jax.export of jax <= 0.5 imports absl without requiring it (as in corpus-gen/versions).
absl=${CARGO_TARGET_DIR:-target}/versions-absl
if [ ! -d "$absl/absl" ]; then
  python3 -m pip install -q --disable-pip-version-check --target "$absl" absl-py
fi
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(0.4.30 0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2)
for v in "${versions[@]}"; do
  py=$(tests/trace/venv.sh jax "$v")
  PYTHONPATH=$absl JAX_PLATFORMS=cpu "$py" corpus-gen/pallas/gen.py "$out" 2>&1 | grep -v Warning
done
