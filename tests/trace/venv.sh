#!/usr/bin/env bash
# Makes the Python environments the tracing tests run programs in, once:
#   venv.sh jax       -> target/venv-trace           (jax==0.10.2, the recipe of shared/oracle/setup.sh)
#   venv.sh catalyst  -> target/venv-trace-catalyst  (pennylane-catalyst==0.15.0, which pins jax 0.7.1)
# Prints the interpreter's path last. Idempotent; concurrent callers wait on a lock.
set -euo pipefail
kind=${1:-jax}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
case "$kind" in
  jax) dir=$target/venv-trace; pkgs=('jax==0.10.2' 'jaxlib==0.10.2' 'numpy>=2,<3'); probe='import jax, numpy' ;;
  catalyst) dir=$target/venv-trace-catalyst; pkgs=('pennylane-catalyst==0.15.0'); probe='import catalyst, jax' ;;
  *) echo "usage: venv.sh jax|catalyst" >&2; exit 2 ;;
esac
exec 9>"$dir.lock"
flock 9
if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "$probe" 2>/dev/null; then
  rm -rf "$dir"
  python3 -m venv "$dir"
  start=$(date +%s)
  "$dir/bin/pip" install -q --disable-pip-version-check "${pkgs[@]}" >&2
  echo "venv.sh: installed ${pkgs[*]} in $(( $(date +%s) - start )) s" >&2
fi
echo "$dir/bin/python"
