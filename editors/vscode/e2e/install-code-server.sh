#!/usr/bin/env bash
# Installs code-server (a real VS Code served to a browser) into the folder
# given as $1, from the npm registry alone, for the end-to-end test. Does
# nothing when that folder already holds a finished install, and holds a lock
# so that two test runs never install into it at once.
#
# 4.100.3 (VS Code 1.100.3) is code-server's last release for Node 20. Its
# postinstall builds native modules and fetches ripgrep from outside the
# registries, hence:
#   npm_config_yes=true      node-pty runs `npx node-gyp` without asking
#   npm_config_nodedir=/usr  node-gyp builds against the local Node headers
#   a ripgrep cache          @vscode/ripgrep finds Debian's `rg` in its download
#                            cache (under os.tmpdir()) and downloads nothing
# Debian packages it needs: ripgrep, libkrb5-dev (kerberos), g++, make, python3.
set -euo pipefail

version=4.100.3
ripgrep_package=1.15.11
ripgrep_asset=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz

dest=${1:?usage: install-code-server.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
done_marker="$dest/.installed-$version"
entry="$dest/node_modules/code-server/out/node/entry.js"

exec 9>"$dest/.lock"
flock 9
if [ -f "$done_marker" ] && [ -f "$entry" ]; then
  exit 0
fi

for tool in rg g++ make python3 tar; do
  if ! command -v "$tool" >/dev/null; then
    echo "install-code-server.sh: $tool is missing (scripts/test.sh installs it)" >&2
    exit 1
  fi
done
if [ "$(uname -m)" != x86_64 ]; then
  echo "install-code-server.sh: only x86-64 has a ripgrep cache entry here" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp/vscode-ripgrep-cache-$ripgrep_package"
cp "$(command -v rg)" "$work/rg"
tar -czf "$work/tmp/vscode-ripgrep-cache-$ripgrep_package/$ripgrep_asset" -C "$work" rg

rm -rf "$dest/node_modules" "$dest/package.json" "$dest/package-lock.json" "$done_marker"
echo '{ "name": "jaxpr-vscode-e2e-code-server", "private": true }' >"$dest/package.json"
TMPDIR="$work/tmp" npm_config_yes=true npm_config_nodedir=/usr \
  npm install --prefix "$dest" --unsafe-perm --no-audit --no-fund --loglevel=error \
  "code-server@$version"
if [ ! -f "$entry" ]; then
  echo "install-code-server.sh: npm finished but $entry is missing" >&2
  exit 1
fi
touch "$done_marker"
