#!/usr/bin/env bash
# Native libraries under valgrind's memcheck: quantum programs (Catalyst's
# runtime and Lightning loaded by the library) and classical ones of
# tests/data/catalyst-suite, each built with `jaxpr-build build --emit native`
# for x86-64-v3 (valgrind 3.19 cannot run AVX-512) and called from C
# (bench/quantum/calls.c) a few times, on the success path and on a failing
# call. Any invalid read or write, use of an uninitialised value, or block
# definitely, indirectly or possibly lost fails the run; blocks still
# reachable at exit (the runtime's and Python's caches) are not counted.
# scripts/valgrind-native.supp holds the suppressions for code that is not
# the library's own (empty when nothing needs one: see its comments).
#
# usage: scripts/valgrind-native.sh JAXPR_BUILD [CALLS]
# The runtime is found as the build finds it (JAXPR_CATALYST_RUNTIME, or the
# python3 on PATH with pennylane-catalyst 0.15.0).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: valgrind-native.sh JAXPR_BUILD [CALLS]}
calls=${2:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/jaxpr-valgrind-native.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O1 -g -Wall -Werror -o "$work/calls" "$root/bench/quantum/calls.c" -ldl

# program | inputs (--fail: every call must fail with a message)
cases=(
  "ctrl_rotation|f64:0.6"
  "ghz_dynamic_wires|i64:3"
  "ghz_dynamic_wires|--fail i64:-2"
  "dynamic_register_expval|i64:3 f64:1.1"
  "mid_circuit_loop|f64:0.8"
  "measure_postselect_zero_reset|f64:0.4"
  "adjoint_of_loop|f64:0.3"
  "adjoint_unitary|f64:1.4"
  "ctrl_of_function|f64:2.3"
  "expval_tensor|f64:1.0 f64:-0.4"
  "var_of_tensor|f64:1.9"
  "global_phase_controlled|f64:1.8"
  "state_vector|f64:0.5"
  "sample_fixed_shots|f64:0.4"
  "counts_dynamic_shots|i64:20"
  "while_with_measure|f64:0.6 i64:2"
  "expval_dynamic_wires|--fail i64:0"
  "mcm_expval_one_shot|f64:0.9"
  "mcm_var_and_probs_one_shot|f64:1.3"
  "mcm_counts_one_shot|f64:2.0"
  "ones_of_size|i64:5"
  "forloop_keep_and_grow|i64:4"
  "whileloop_grow|i64:3"
  "cond_keep_size|i64:4 bool:1"
)
failed=0
for c in "${cases[@]}"; do
  IFS='|' read -r name inputs <<<"$c"
  so="$work/lib$name.so"
  [ -f "$so" ] || "$build" build "$root/tests/data/catalyst-suite/$name.jaxpr" --emit native \
    --cpu x86-64-v3 -o "$so" >/dev/null 2>&1 ||
    "$build" build "$root/tests/data/catalyst-suite/$name.jaxpr" --emit native --cpu x86-64-v3 -o "$so"
  log="$work/$name.log"
  start=$(date +%s)
  # shellcheck disable=SC2086  (the inputs are words)
  if valgrind -q --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
    --suppressions="$root/scripts/valgrind-native.supp" \
    "$work/calls" "$so" "$name" "$calls" 0 $inputs >"$log" 2>&1; then
    printf 'clean  %-32s %-18s %3ss\n' "$name" "$inputs" $(($(date +%s) - start))
  else
    printf 'FAILED %-32s %-18s (exit %s)\n' "$name" "$inputs" "$?"
    sed 's/^/    /' "$log"
    failed=1
  fi
done
exit "$failed"
