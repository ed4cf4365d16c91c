#!/usr/bin/env bash
# Makes the Python environments the tracing tests run programs in (and the
# one tests/graph.rs loads Model Explorer's package in), once:
#   venv.sh jax               -> target/venv-trace           (jax==0.10.2, the recipe of shared/oracle/setup.sh)
#   venv.sh catalyst          -> target/venv-trace-catalyst  (pennylane-catalyst==0.15.0, which pins jax 0.7.1)
#   venv.sh jax VERSION       -> target/venv-trace-jax-VERSION       (jax==VERSION, jaxlib==VERSION)
#   venv.sh pprof             -> target/venv-pprof           (protobuf: decodes `jaxpr stats --format pprof`)
#   venv.sh catalyst VERSION  -> target/venv-trace-catalyst-VERSION  (pennylane-catalyst==VERSION, its
#                                pinned jax, and the pennylane / pennylane-lightning minor of its release)
#   venv.sh jsonschema        -> target/venv-jsonschema      (jsonschema, which validates the SARIF output)
#   venv.sh model-explorer    -> target/venv-model-explorer  (ai-edge-model-explorer==0.1.34)
#   venv.sh wheel-api         -> target/venv-wheel-api       (jax 0.10.2 with pandas, pytest, pillow, mypy, a Jupyter
#                                kernel and client, and lineax: tests/wheel.rs runs the Python API, its pytest
#                                plugin and a notebook in it; tests/trace.rs a session of a library's solve)
# Prints the interpreter's path last. Idempotent; concurrent callers wait on a lock.
set -euo pipefail
kind=${1:-jax}
version=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
# The pennylane minor each Catalyst release was made with (its Requires-Dist
# says only `pennylane>=0.N`, and a later PennyLane breaks an older Catalyst).
pennylane_minor() {
  case "$1" in
    0.10.*) echo 0.40 ;; 0.11.*) echo 0.41 ;; 0.12.*) echo 0.42 ;; 0.13.*) echo 0.43 ;;
    0.14.*) echo 0.44 ;; 0.15.*) echo 0.45 ;;
    *) echo "venv.sh: no known pennylane minor for catalyst $1" >&2; exit 2 ;;
  esac
}
case "$kind:$version" in
  jax:|jax:0.10.2) dir=$target/venv-trace; pkgs=('jax==0.10.2' 'jaxlib==0.10.2' 'numpy>=2,<3'); probe='import jax, numpy' ;;
  catalyst:|catalyst:0.15.0) dir=$target/venv-trace-catalyst; pkgs=('pennylane-catalyst==0.15.0'); probe='import catalyst, jax' ;;
  jsonschema:) dir=$target/venv-jsonschema; pkgs=('jsonschema==4.26.0'); probe='import jsonschema' ;;
  model-explorer:) dir=$target/venv-model-explorer; pkgs=('ai-edge-model-explorer==0.1.34'); probe='import dacite, model_explorer.graph_builder' ;;
  wheel-api:) dir=$target/venv-wheel-api
    pkgs=('jax==0.10.2' 'jaxlib==0.10.2' 'numpy>=2,<3' 'pandas==3.1.1' 'pytest==9.2.0' 'nbclient==0.11.0' 'nbformat>=5.10,<6' 'ipykernel>=6.29,<8' 'pillow>=11,<13' 'mypy>=1.13,<2' 'equinox==0.13.8' 'lineax==0.1.1' 'jaxtyping==0.3.11')
    probe='import jax, pandas, pytest, nbclient, nbformat, ipykernel, PIL, mypy, lineax' ;;
  pprof:) dir=$target/venv-pprof; pkgs=('protobuf>=5,<8'); probe='import google.protobuf' ;;
  jax:*) dir=$target/venv-trace-jax-$version; pkgs=("jax==$version" "jaxlib==$version"); probe='import jax, numpy' ;;
  catalyst:*)
    pl=$(pennylane_minor "$version")
    dir=$target/venv-trace-catalyst-$version
    pkgs=("pennylane-catalyst==$version" "pennylane~=$pl.0" "pennylane-lightning~=$pl.0")
    # Catalyst < 0.14 imports gast without requiring it: diastatic-malt
    # 2.15.2 (the one of its time) brought it, 2.15.3 no longer does.
    case "$version" in 0.1[0-3].*) pkgs+=('diastatic-malt==2.15.2') ;; esac
    # PennyLane 0.40 (Catalyst 0.10) needs autoray's NumpyMimic, gone in 0.7.
    case "$pl" in 0.40) pkgs+=('autoray~=0.6.12') ;; esac
    probe='import catalyst, jax, pennylane' ;;
  *) echo "usage: venv.sh jax|catalyst [VERSION] | jsonschema | model-explorer | pprof | wheel-api" >&2; exit 2 ;;
esac
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
