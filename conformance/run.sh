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

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
listen="127.0.0.1:$port"
log="$(mktemp)"
"$bin" serve --memory --listen "$listen" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT

for _ in $(seq 1 150); do
  if "$bin" healthcheck --listen "$listen" 2>/dev/null; then break; fi
  if ! kill -0 "$server" 2>/dev/null; then cat "$log"; echo "the server exited" >&2; exit 1; fi
  sleep 0.2
done

node conformance/audit.mjs "http://$listen/graphql"
