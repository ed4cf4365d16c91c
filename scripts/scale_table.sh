#!/usr/bin/env bash
# Prints the README's scale table: for each large corpus file, parse
# throughput, whole-file check, incremental edits (examples/scale.rs), peak
# memory of `jaxpr check` (/usr/bin/time -v) and JAX's own check_jaxpr on the
# same program (scripts/jax_check_time.py, in the oracle venv $JAXPR_ORACLE_PY,
# default /work/.venv-oracle/bin/python; skipped when it is missing).
#
#     bash scripts/scale_table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${JAXPR_CORPUS:-../shared/corpus}
py=${JAXPR_ORACLE_PY:-/work/.venv-oracle/bin/python}
cargo build --release -q --bin jaxpr --example scale
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| file | size | equations | parse | full check (parse + resolve + types + diagnostics) | edit one equation | edit a binder | edit an inline nested jaxpr | edit a \`let\`: an equation | a binder | its signature | peak memory, \`jaxpr check\` | JAX \`check_jaxpr\` |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for spec in transformer150_grad:150 transformer600_grad:600; do
    name=${spec%%:*}
    blocks=${spec##*:}
    gzip -dc "$corpus/large/$name.jaxpr.gz" > "$tmp/$name.jaxpr"
    row=$(target/release/examples/scale "$tmp/$name.jaxpr")
    size=$(stat -c %s "$tmp/$name.jaxpr")
    kb=$( { /usr/bin/time -v target/release/jaxpr check "$tmp/$name.jaxpr" >/dev/null; } 2>&1 | awk '/Maximum resident set size/ {print $6}')
    peak=$(awk -v kb="$kb" -v size="$size" 'BEGIN { printf "%.0f MB (%.1f× the file)", kb / 1000, kb * 1000 / size }')
    jax="n/a"
    if [ -x "$py" ]; then
        out=$("$py" scripts/jax_check_time.py "$corpus/large" "$blocks" 1 2>/dev/null | tail -1)
        jax=$(awk -v s="${out##* }" 'BEGIN { printf "%.2f s", s }')
    fi
    echo "| $name $row $peak | $jax |"
done
echo
echo "Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)."
