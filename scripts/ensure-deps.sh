#!/usr/bin/env bash
# Installs the npm dependencies when node_modules is missing or older than the lock file,
# so `npm start` and `npm test` work on a fresh clone with nothing done by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ ! -x node_modules/.bin/node ]; then
  echo "[deps] installing npm packages (npm ci)…"
  npm ci --no-audit --no-fund --loglevel=error
fi
