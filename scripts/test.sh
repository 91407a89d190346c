#!/usr/bin/env bash
# `npm test`: installs what the tests need, then static checks, then every test tier
# (vitest.config.ts: unit, integration, e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
export PATH="$PWD/node_modules/.bin:$PATH"
bash scripts/tools.sh
export QUOTASCOPE_REQUIRE_TOOLS=1
echo "[test] node $(node --version)"
echo "[test] typecheck"
tsc --noEmit -p tsconfig.json
tsc --noEmit -p loadtest/k6/tsconfig.json
echo "[test] lint"
biome check .
echo "[test] build the packages (dist/ and dist/packages/quotascope-limiter; test/package packs and installs both)"
npm run --silent build
echo "[test] generated dashboards and rules are up to date"
node cli/quotascope.ts dashboards --check
echo "[test] vitest"
vitest run
