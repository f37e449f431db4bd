#!/usr/bin/env bash
# Starts tablegraph on the embedded in-memory store and runs the graphql-http audits against it.
#
#   bash conformance/run.sh            # builds target/debug/tablegraph if needed
#   TABLEGRAPH_BIN=target/release/tablegraph bash conformance/run.sh
#
# Prints `N passed, N failed` and exits non-zero when a MUST or SHOULD audit fails.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${TABLEGRAPH_BIN:-target/debug/tablegraph}"
[[ -x "$bin" ]] || cargo build --locked --bin tablegraph

(cd conformance && npm ci --no-audit --no-fund --loglevel=error)

source scripts/serve.sh
start_server "$bin"
node conformance/audit.mjs "http://$listen/graphql"
