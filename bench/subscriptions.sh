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

source scripts/serve.sh
for subscribers in 1 100; do
  start_server "$bin"
  node clients/latency.mjs "http://$listen/graphql" "$subscribers" "${WRITES:-200}"
  stop_server
done
