#!/usr/bin/env bash
# Builds the vendored three.js bundle of the 3-D replay page (run by a developer, never at install time):
#   bash tools/build_three.sh
# -> torchrl_render/replay/vendor/three.min.js (an IIFE defining the global THREE, only the parts
#    tools/three_entry.js names) and three.js's LICENSE beside it. Needs node + npm (the npm registry).
set -euo pipefail
THREE_VERSION=0.187.0
ESBUILD_VERSION=0.28.2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/torchrl_render/replay/vendor"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "three@$THREE_VERSION" "esbuild@$ESBUILD_VERSION"
cp "$ROOT/tools/three_entry.js" entry.js
{
  echo "/* three.js r$(echo "$THREE_VERSION" | cut -d. -f2) (three@$THREE_VERSION, MIT, see LICENSE beside this file): the subset in tools/three_entry.js, bundled by tools/build_three.sh with esbuild@$ESBUILD_VERSION */"
  npx esbuild entry.js --bundle --minify --format=iife --global-name=THREE --target=es2020 --legal-comments=none
} > "$OUT/three.min.js"
cp node_modules/three/LICENSE "$OUT/LICENSE"
echo "wrote $OUT/three.min.js ($(wc -c < "$OUT/three.min.js") bytes), three@$THREE_VERSION, esbuild@$ESBUILD_VERSION"
