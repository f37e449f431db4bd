#!/usr/bin/env bash
# Subscription delivery latency (mutation answered → event received) at 1 and 1,000
# subscribers, over graphql-transport-ws and over AppSync's real-time protocol; then the
# server's memory per idle subscription, 10,000 of them held open over each protocol. Against
# `tablegraph serve --memory` (release build).
#
#   bash bench/subscriptions.sh            # WRITES=200 by default
#   BENCH_SKIP_BUILD=1 WRITES=500 bash bench/subscriptions.sh
#
# Prints one JSON line per protocol and subscriber count (clients/latency.mjs), and one per
# protocol for the idle subscriptions (resident memory before and after, per subscription).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="target/release/tablegraph"
[[ ${BENCH_SKIP_BUILD:-} == 1 ]] || cargo build --release --locked --bin tablegraph
(cd clients && npm ci --no-audit --no-fund --loglevel=error)

source scripts/serve.sh
# A thousand sockets connect at once: all may wait for connection_init together.
bounds=(--max-pending-sockets 2000 --max-subscriptions 20000)
for protocol in graphql-ws appsync; do
  for subscribers in 1 1000; do
    start_server "$bin" "${bounds[@]}"
    node clients/latency.mjs "http://$listen/graphql" "$subscribers" "${WRITES:-200}" "$protocol"
    stop_server
  done
done

# Memory per idle subscription: 100 connections of 100 subscriptions each.
rss_kb() { ps -o rss= -p "$server" | tr -d ' '; }
for protocol in graphql-ws appsync; do
  start_server "$bin" "${bounds[@]}"
  before="$(rss_kb)"
  idle_log="$(mktemp)"
  node clients/idle.mjs "http://$listen/graphql" 100 100 "$protocol" >"$idle_log" &
  idle=$!
  until grep -q '^open ' "$idle_log"; do
    kill -0 "$idle" 2>/dev/null || { cat "$idle_log"; exit 1; }
    sleep 0.2
  done
  after="$(rss_kb)"
  python3 -c "
import json, sys
before, after = int(sys.argv[2]), int(sys.argv[3])
print(json.dumps({'protocol': sys.argv[1], 'idle_subscriptions': 10000, 'connections': 100,
                  'rss_before_kb': before, 'rss_after_kb': after,
                  'per_subscription_kb': round((after - before) / 10000, 2)}))" "$protocol" "$before" "$after"
  kill "$idle" 2>/dev/null || true
  wait "$idle" 2>/dev/null || true
  rm -f "$idle_log"
  stop_server
done
