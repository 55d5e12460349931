#!/usr/bin/env bash
# setup.sh: the viewer the browser tests open traces in, from the npm registry, pinned:
# speedscope (a Chrome-trace viewer, static files) and puppeteer-core (drives Debian's chromium).
# Usage: tests/browser/setup.sh DIR   -> DIR/node_modules. Idempotent: nothing is fetched when
# the pinned versions are there. Exit 3 (with one line) when the registry can not be reached.
set -euo pipefail
dir=$1
speedscope=1.25.0
puppeteer=24.43.1
have() { [ -f "$dir/node_modules/$1/package.json" ] &&
         grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"; }
if have speedscope "$speedscope" && have puppeteer-core "$puppeteer"; then exit 0; fi
command -v npm >/dev/null || { echo "npm is not installed (Debian: apt-get install npm)"; exit 3; }
mkdir -p "$dir"
if ! timeout 60 npm view --silent speedscope@"$speedscope" version >/dev/null 2>&1; then
  echo "the npm registry can not be reached ($(npm config get registry 2>/dev/null))"
  exit 3
fi
# puppeteer-core never downloads a browser; the test uses Debian's chromium.
timeout 600 npm install --silent --no-audit --no-fund --no-save --prefix "$dir" \
  "speedscope@$speedscope" "puppeteer-core@$puppeteer" >/dev/null
