#!/usr/bin/env bash
# Subscription delivery latency (mutation answered → event received), at 1 and 100 graphql-ws
# subscribers, against `tablegraph serve --memory` (release build).
#
#   bash bench/subscriptions.sh            # WRITES=200 by default
#   BENCH_SKIP_BUILD=1 WRITES=500 bash bench/subscriptions.sh
#
# Prints one JSON line per subscriber count (clients/latency.mjs).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="target/release/tablegraph"
[[ ${BENCH_SKIP_BUILD:-} == 1 ]] || cargo build --release --locked --bin tablegraph
(cd clients && npm ci --no-audit --no-fund --loglevel=error)

for subscribers in 1 100; do
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  listen="127.0.0.1:$port"
  "$bin" serve --memory --listen "$listen" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 1 150); do
    if "$bin" healthcheck --listen "$listen" 2>/dev/null; then break; fi
    sleep 0.2
  done
  node clients/latency.mjs "http://$listen/graphql" "$subscribers" "${WRITES:-200}"
  kill "$server"
  wait "$server" 2>/dev/null || true
done
