#!/usr/bin/env bash
# Starts tablegraph on the embedded in-memory store, with an API key, an HS256 token issuer and
# a small --max-event-bytes, and drives it with the real npm clients: its subscriptions with
# graphql-ws (over ws) and graphql-sse, its queries and mutations with aws-amplify v6; then an
# Amplify app's schema with the operations its codegen generated, through aws-amplify v6.
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
secret="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
start_server "$bin" --api-key "$key" --max-event-bytes 400 \
  --jwt-hs256-secret "$secret" --jwt-issuer clients
node clients/subscriptions.mjs "http://$listen/graphql" "$key" || { cat "$server_log"; exit 1; }
token="$("$bin" token --jwt-hs256-secret "$secret" --jwt-issuer clients --sub amplify-user)"
first="$listen"
first_log="$server_log"
# The second server: an Amplify app as its repository commits it, served in Amplify's shape.
(
  start_server "$bin" --schema tests/fixtures/amplify/quick-notes/schema.graphql \
    --jwt-hs256-secret "$secret" --jwt-issuer clients
  node clients/amplify.mjs "http://$first/graphql" "$key" "$token" \
    "http://$listen/graphql" tests/fixtures/amplify/quick-notes/operations.graphql ||
    { cat "$first_log" "$server_log"; exit 1; }
)
