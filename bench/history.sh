#!/usr/bin/env bash
# Whether writes and subscription events cost more as the change stream's history grows: a
# timed window of writes, FILL more, a timed window, SETTLE seconds idle and a last timed
# window, against `tablegraph serve --memory` (release build) with one graphql-ws subscriber
# (clients/history.mjs says why it waits).
#
#   bash bench/history.sh                   # FILL=200000 WINDOW=1000 SETTLE=0 REPS=3 BATCH=1 by default
#   BENCH_SKIP_BUILD=1 FILL=20000 BIN=path/to/tablegraph bash bench/history.sh
#
# Prints one JSON line per window.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${BIN:-target/release/tablegraph}"
[[ ${BENCH_SKIP_BUILD:-} == 1 ]] || cargo build --release --locked --bin tablegraph
(cd clients && npm ci --no-audit --no-fund --loglevel=error)

source scripts/serve.sh
start_server "$bin"
node clients/history.mjs "http://$listen/graphql" "${FILL:-200000}" "${WINDOW:-1000}" "${CONCURRENCY:-8}" "${SETTLE:-0}" "${REPS:-3}" "${BATCH:-1}"
stop_server
