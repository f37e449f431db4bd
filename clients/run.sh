#!/usr/bin/env bash
# Starts tablegraph on the embedded in-memory store, with an API key and a small
# --max-event-bytes, and drives its subscriptions with the real npm clients (graphql-ws over ws,
# graphql-sse).
#
#   bash clients/run.sh            # builds target/debug/tablegraph if needed
#   TABLEGRAPH_BIN=target/release/tablegraph bash clients/run.sh
#
# Prints `N passed, N failed` and exits non-zero when a check fails.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${TABLEGRAPH_BIN:-target/debug/tablegraph}"
[[ -x "$bin" ]] || cargo build --locked --bin tablegraph

(cd clients && npm ci --no-audit --no-fund --loglevel=error)

source scripts/serve.sh
key="da2-clients-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
start_server "$bin" --api-key "$key" --max-event-bytes 400
node clients/subscriptions.mjs "http://$listen/graphql" "$key" || { cat "$server_log"; exit 1; }
