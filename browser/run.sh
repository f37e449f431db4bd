#!/usr/bin/env bash
# Drives the GraphiQL page in headless Chromium (Debian's `chromium`), with no network but
# loopback, against tablegraph serving the demo data with an API key (browser/graphiql.mjs says
# what it checks); then aws-amplify's DataStore in two browser contexts against tablegraph
# serving an offline-first app over TLS (browser/datastore.mjs says what it checks).
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

# DataStore: conflict detection as the app's transform.conf.json sets it, served over TLS with a
# self-signed certificate made by openssl.
app=tests/fixtures/amplify-datastore-app
tls_dir="$(mktemp -d)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>/dev/null
TABLEGRAPH_TLS_CERT="$tls_dir/cert.pem" TABLEGRAPH_TLS_KEY="$tls_dir/key.pem" \
  start_server "$bin" --schema "$app/schema.graphql" --api-key "$key"
NODE_EXTRA_CA_CERTS="$tls_dir/cert.pem" node browser/datastore.mjs "https://$listen/graphql" \
  "$key" "$chromium" || { cat "$server_log"; exit 1; }
stop_server
rm -rf "$tls_dir"
