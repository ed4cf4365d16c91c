#!/usr/bin/env bash
# CI for the VS Code extension: clean install, compile, tests, package, and a
# check that the package loads. Runs from a fresh clone; needs Node 20+ and
# the npm registry.
set -euo pipefail
cd "$(dirname "$0")"

vsix=jaxpr-0.1.0.vsix

# `--installed`: node_modules is already there (.ci/run installs it).
if [ "${1:-}" != "--installed" ]; then
  npm ci --no-audit --no-fund
fi
npm run compile
npm test
rm -f "$vsix"
npm run package

if [ ! -s "$vsix" ]; then
  echo "ci.sh: $vsix was not produced" >&2
  exit 1
fi

# Unpack it and load the extension from the package alone.
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
if command -v unzip >/dev/null; then
  unzip -q "$vsix" -d "$unpacked"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$vsix" "$unpacked"
fi
for f in package.json readme.md LICENSE.txt out/extension.js syntaxes/jaxpr.tmLanguage.json language-configuration.json; do
  if [ ! -f "$unpacked/extension/$f" ]; then
    echo "ci.sh: $vsix lacks extension/$f" >&2
    exit 1
  fi
done
node test/smoke-vsix.js "$unpacked/extension"
echo "ci.sh: built $vsix ($(wc -c <"$vsix") bytes)"
