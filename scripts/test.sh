#!/usr/bin/env bash
# The README's test command: installs what a fresh Debian 12 machine lacks,
# then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools the tests use: gzip (large corpus files), Neovim (the editor
# end-to-end test drives the real one), valgrind (native libraries are
# called under it), Node and npm (the VS Code
# extension's tests and packaging), Python 3 with venv (the tracing tests
# make virtual environments with jax and Catalyst from PyPI:
# tests/trace/venv.sh). Rust comes with the machine.
need=()
command -v gzip >/dev/null || need+=(gzip)
command -v flock >/dev/null || need+=(util-linux)
if ! command -v python3 >/dev/null; then
  need+=(python3 python3-venv)
elif ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  need+=(python3-venv)
fi
command -v nvim >/dev/null || need+=(neovim)
# valgrind: tests/native.rs calls every native library under it.
command -v valgrind >/dev/null || need+=(valgrind)
# Open MPI: tests/mpi.rs runs multi-device programs' libraries under
# mpirun, and their builds compile the MPI runtime with mpicc.
command -v mpirun >/dev/null || need+=(openmpi-bin)
dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)
# objdump: tests/native.rs reads the instructions of libraries built for an
# x86-64 level.
command -v objdump >/dev/null || need+=(binutils)
# g++: build.rs compiles the StableHLO lowering's operation creation
# against MLIR's C++ headers.
command -v g++ >/dev/null || need+=(g++)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
# The VS Code end-to-end test (server/tests/vscode.rs): Chromium drives
# code-server, whose npm install builds native modules (make, libkrb5-dev
# for kerberos) and takes ripgrep from Debian instead of downloading it.
command -v chromium >/dev/null || need+=(chromium)
command -v rg >/dev/null || need+=(ripgrep)
command -v make >/dev/null || need+=(make)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
# LLVM and MLIR 22 (melior builds StableHLO; mlir-opt reads bytecode back in
# the tests), with the libraries their static archives link against.
for pkg in llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev libpolly-22-dev \
           libzstd-dev zlib1g-dev libxml2-dev libncurses-dev libffi-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

# The VS Code extension's Node packages (from its lock file).
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error)

# The shared corpus sits beside the clone.
if [ -z "${JAXPR_CORPUS:-}" ] && [ ! -d ../shared/corpus ]; then
  echo "shared corpus not found beside the clone (../shared/corpus); set JAXPR_CORPUS" >&2
  exit 1
fi

# The tidy gate: rustfmt's style and clippy's lints, with the allowed lints
# chosen once in Cargo.toml's [workspace.lints] (each with its reason).
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

# Every test of the workspace (output kept to print one closing total).
log=$(mktemp)
set +e
cargo test --release --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
