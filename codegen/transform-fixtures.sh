#!/usr/bin/env bash
# Runs Amplify's GraphQL transformer (codegen/transform.mjs) on every Amplify app of the test
# fixtures (tests/fixtures/amplify/ and tests/fixtures/amplify-golden/) and writes what it prints
# to the app's `transformed.graphql`, the golden API that tests/api/amplify_golden.rs compares
# tablegraph's with. The app's amplify-cli.json and transform.conf.json are given to it; an app's
# `transform.args` holds any other arguments (`--v1` for a transformer v1 app that commits no
# cli.json). It also writes the Gen 2 app's (tests/fixtures/amplify-gen2/) schema.graphql and
# model-introspection.json from its resource.mjs (codegen/gen2.mjs), and the DataStore app's
# (tests/fixtures/amplify-datastore-app/) models as `amplify codegen models` writes them
# (codegen/datastore-models.mjs).
#
#   bash codegen/transform-fixtures.sh           # rewrite the files
#   bash codegen/transform-fixtures.sh --check   # fail when a committed file is not what the
#                                                # transformer prints (CI)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
check=false
[[ "${1:-}" == "--check" ]] && check=true
bash "$root/codegen/run.sh" install
status=0
for app in "$root"/tests/fixtures/amplify/*/ "$root"/tests/fixtures/amplify-golden/*/; do
  app="${app%/}"
  [[ -f "$app/schema.graphql" ]] || continue
  args=()
  [[ -f "$app/amplify-cli.json" ]] && args+=(--cli-json "$app/amplify-cli.json")
  [[ -f "$app/transform.conf.json" ]] && args+=(--transform-conf "$app/transform.conf.json")
  if [[ -f "$app/transform.args" ]]; then
    read -r -a extra < "$app/transform.args"
    args+=("${extra[@]}")
  fi
  out="$(mktemp)"
  if ! node "$root/codegen/transform.mjs" "$app/schema.graphql" "${args[@]}" > "$out" 2> "$out.err"; then
    echo "${app#"$root"/}: the transformer refused it:" >&2
    grep -v '^WARN' "$out.err" | head -20 >&2
    status=1
  elif $check; then
    if ! cmp -s "$out" "$app/transformed.graphql"; then
      echo "${app#"$root"/}/transformed.graphql is not what the transformer prints" >&2
      diff "$app/transformed.graphql" "$out" | head -20 >&2 || true
      status=1
    fi
  else
    cp "$out" "$app/transformed.graphql"
  fi
  rm -f "$out" "$out.err"
done
# The Gen 2 app: the SDL and model introspection Gen 2's tooling makes of its resource.mjs.
if $check; then
  node "$root/codegen/gen2.mjs" "$root/tests/fixtures/amplify-gen2" --check || status=1
  node "$root/codegen/datastore-models.mjs" "$root/tests/fixtures/amplify-datastore-app" --check ||
    status=1
else
  node "$root/codegen/gen2.mjs" "$root/tests/fixtures/amplify-gen2"
  node "$root/codegen/datastore-models.mjs" "$root/tests/fixtures/amplify-datastore-app"
fi
exit $status
