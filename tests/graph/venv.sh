#!/usr/bin/env bash
# Makes the Python environment the Model Explorer test loads `jaxpr graph`'s
# JSON in, once: target/venv-model-explorer with ai-edge-model-explorer from
# PyPI. Prints the interpreter's path last. Idempotent; concurrent callers
# wait on a lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
dir=$target/venv-model-explorer
pkgs=('ai-edge-model-explorer==0.1.34')
probe='import dacite, model_explorer.graph_builder'
exec 9>"$dir.lock"
flock 9
if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "$probe" 2>/dev/null; then
  rm -rf "$dir"
  python3 -m venv "$dir"
  start=$(date +%s)
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "${pkgs[@]}" >&2
  echo "venv.sh: installed ${pkgs[*]} in $(( $(date +%s) - start )) s" >&2
  if ! "$dir/bin/python" -c "$probe"; then
    echo "venv.sh: $dir cannot run: $probe" >&2
    exit 1
  fi
fi
echo "$dir/bin/python"
