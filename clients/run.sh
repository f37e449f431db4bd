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

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
listen="127.0.0.1:$port"
key="da2-clients-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
log="$(mktemp)"
"$bin" serve --memory --listen "$listen" --api-key "$key" --max-event-bytes 400 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT

for _ in $(seq 1 150); do
  if "$bin" healthcheck --listen "$listen" 2>/dev/null; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then cat "$log"; echo "the server exited" >&2; exit 1; fi
  sleep 0.2
done

node clients/subscriptions.mjs "http://$listen/graphql" "$key" || { cat "$log"; exit 1; }
