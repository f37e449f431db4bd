#!/usr/bin/env bash
# Checks the alerts and a live scrape with Prometheus' own promtool (Debian's `prometheus`):
# the rules load, their unit tests (alerts.test.yaml) pass, and tablegraph's /metrics passes
# `promtool check metrics`.
#
#   bash deploy/prometheus/check.sh     # builds target/debug/tablegraph if needed
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bin="${TABLEGRAPH_BIN:-target/debug/tablegraph}"
[[ -x "$bin" ]] || cargo build --locked --bin tablegraph

promtool check rules deploy/prometheus/alerts.yaml
promtool test rules deploy/prometheus/alerts.test.yaml

source scripts/serve.sh
start_server "$bin"
# Up is not ready: until the store answers, requests get 503.
for _ in $(seq 1 150); do
  curl -fsS "http://$listen/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
# A query first, so that the storage and request families have samples.
curl -fsS "http://$listen/graphql" -H 'content-type: application/json' \
  -d '{"query":"{ listFarms(first: 2) { edges { node { id } } } }"}' >/dev/null
curl -fsS "http://$listen/metrics" | promtool check metrics
echo "promtool: the rules, their tests and a live scrape pass"
