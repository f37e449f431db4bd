#!/usr/bin/env bash
# Drives the GraphiQL page in headless Chromium (Debian's `chromium`), with no network but
# loopback, against tablegraph serving the demo data with an API key (browser/graphiql.mjs says
# what it checks).
#
#   bash browser/run.sh            # builds target/debug/tablegraph if needed
#   CHROMIUM=/path/to/chrome TABLEGRAPH_BIN=target/release/tablegraph bash browser/run.sh
#
# Prints `N passed, N failed` and exits non-zero when a check fails.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="${TABLEGRAPH_BIN:-target/debug/tablegraph}"
[[ -x "$bin" ]] || cargo build --locked --bin tablegraph
chromium="${CHROMIUM:-$(command -v chromium || true)}"
[[ -n $chromium ]] || { echo "no chromium: apt-get install chromium" >&2; exit 1; }

(cd browser && npm ci --no-audit --no-fund --loglevel=error)

data="$(mktemp -d)"
"$bin" demo --data-dir "$data" >/dev/null
source scripts/serve.sh
key="da2-browser-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
SERVE_STORE="--data-dir $data" start_server "$bin" --api-key "$key"
node browser/graphiql.mjs "http://$listen" "$key" "$chromium" || { cat "$server_log"; exit 1; }
stop_server
rm -rf "$data"
