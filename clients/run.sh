#!/usr/bin/env bash
# Starts tablegraph on the embedded in-memory store, with an API key, an HS256 token issuer and
# a small --max-event-bytes, and drives it with the real npm clients: its subscriptions with
# graphql-ws (over ws) and graphql-sse, Apollo Client's persisted queries (APQ), its queries and
# mutations with aws-amplify v6; then an
# Amplify app's schema with the operations its codegen generated, through aws-amplify v6; then
# aws-amplify's subscriptions, and Apollo Client's with aws-appsync-subscription-link, over
# wss:// (AppSync's real-time protocol) against a server that serves TLS itself, with a
# self-signed certificate made by openssl; last, an Amplify Gen 2 app's `client.models` over TLS.
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
node clients/apollo-persisted.mjs "http://$listen/graphql" "$key" || { cat "$server_log"; exit 1; }
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
# The third server serves TLS itself: aws-amplify's subscriptions over wss://, AppSync's
# real-time protocol, trusting the certificate as an app trusts a private CA.
tls_dir="$(mktemp -d)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" 2>/dev/null
(
  export TABLEGRAPH_TLS_CERT="$tls_dir/cert.pem" TABLEGRAPH_TLS_KEY="$tls_dir/key.pem"
  # IAM callers sign with the test key of tests/fixtures/iam/credentials.toml.
  iam=tests/fixtures/iam/credentials.toml
  iam_key=AKIATABLEGRAPHTEST1
  iam_secret="$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))[sys.argv[2]]["secret"])' "$iam" "$iam_key")"
  start_server "$bin" --api-key "$key" --jwt-hs256-secret "$secret" --jwt-issuer clients \
    --iam-credentials "$iam" --iam-region us-east-1
  NODE_EXTRA_CA_CERTS="$tls_dir/cert.pem" node clients/amplify-realtime.mjs \
    "https://$listen/graphql" "$key" "$token" "$iam_key" "$iam_secret" ||
    { cat "$server_log"; exit 1; }
  # AppSync apps without Amplify: Apollo Client with AWS's own links.
  NODE_EXTRA_CA_CERTS="$tls_dir/cert.pem" node clients/apollo-appsync.mjs \
    "https://$listen/graphql" "$key" || { cat "$server_log"; exit 1; }
)
# An Amplify Gen 2 app: tablegraph serves the SDL its `a.schema(...)` transforms to, and Gen 2's
# own client (`client.models.*`, built from the model introspection) drives it over TLS.
(
  export TABLEGRAPH_TLS_CERT="$tls_dir/cert.pem" TABLEGRAPH_TLS_KEY="$tls_dir/key.pem"
  start_server "$bin" --schema tests/fixtures/amplify-gen2/schema.graphql --api-key "$key"
  NODE_EXTRA_CA_CERTS="$tls_dir/cert.pem" node clients/gen2.mjs "https://$listen/graphql" "$key" \
    tests/fixtures/amplify-gen2/model-introspection.json || { cat "$server_log"; exit 1; }
)
rm -rf "$tls_dir"
