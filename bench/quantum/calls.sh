#!/usr/bin/env bash
# Many calls of built quantum libraries, resident memory printed as they go:
# each program of tests/data/catalyst-suite below is built with
# `jaxpr-build build --emit native` and called CALLS times (default 100000)
# from C (bench/quantum/calls.c), its resident memory printed every tenth of
# the run. A qubit, register, device or output left behind by each call
# shows as growth. One program's calls all fail (a wire outside the register
# it allocated), so the failure path is measured too.
#
# usage: bench/quantum/calls.sh JAXPR_BUILD [CALLS]
# The runtime is found as the build finds it (JAXPR_CATALYST_RUNTIME, or the
# python3 on PATH with pennylane-catalyst 0.15.0).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: calls.sh JAXPR_BUILD [CALLS]}
calls=${2:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/jaxpr-quantum-calls.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O1 -g -Wall -Werror -o "$work/calls" "$root/bench/quantum/calls.c" -ldl

# program | what it exercises | inputs | CALLS divided by (default 1)
cases=(
  "ctrl_rotation|static register, controlled gates, expval|f64:0.6"
  "ghz_dynamic_wires|register sized by an input, probs|i64:3"
  "dynamic_register_expval|register sized by an input, expval|i64:3 f64:1.1"
  "qubits_in_while|qubits inside a while loop|i64:4"
  "mid_circuit_loop|mid-circuit measurements in a for loop, cond|f64:0.8"
  "measure_postselect_zero_reset|postselection and reset|f64:0.4"
  "sample_fixed_shots|sample, 10 static shots|f64:0.4"
  "counts_dynamic_shots|counts, shots from an input|i64:20"
  "expval_dynamic_wires|every call fails: a wire outside its register|--fail i64:0"
  "mcm_expval_one_shot|one shot at a time: 200 devices per call, expval of an outcome|f64:0.9|20"
)
printf '%s calls per program (unless said); resident memory (kB) after the first call and every tenth of the calls\n\n' \
  "$calls"
printf '| program | exercises | after 1 | %s | growth after the first tenth | µs per call |\n' \
  "$(seq -s ' | ' 10 10 100 | sed 's/\([0-9]*\)/\1%/g')"
printf '|---|---|---:|%s---:|---:|\n' "$(printf -- '---:|%.0s' $(seq 1 10))"
for c in "${cases[@]}"; do
  IFS='|' read -r name what inputs fraction <<<"$c"
  n=$((calls / ${fraction:-1}))
  so="$work/lib$name.so"
  "$build" build "$root/tests/data/catalyst-suite/$name.jaxpr" --emit native -o "$so" >/dev/null 2>&1 || "$build" build "$root/tests/data/catalyst-suite/$name.jaxpr" --emit native -o "$so"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  (the inputs are words)
  out=$("$work/calls" "$so" "$name" "$n" $((n / 10)) $inputs)
  end=$(date +%s.%N)
  if ! grep -q "^$n calls$" <<<"$out"; then
    echo "$name: $out" >&2
    exit 1
  fi
  rss=$(awk '/^calls/ { print $4 }' <<<"$out")
  tenth=$(sed -n 2p <<<"$rss")
  last=$(tail -1 <<<"$rss")
  per_call=$(echo "($end - $start) * 1000000 / $n" | bc)
  [ "$n" = "$calls" ] || what="$what; $n calls"
  printf '| %s | %s | %s | %+d kB | %s |\n' "$name" "$what" "$(paste -sd'|' <<<"$rss" | sed 's/|/ | /g')" \
    $((last - tenth)) "$per_call"
done
