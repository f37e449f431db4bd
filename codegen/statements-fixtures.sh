#!/usr/bin/env bash
# Amplify's statement generator (what `amplify codegen` runs; codegen/statements.mjs) on the API
# tablegraph serves for each Amplify app of the test fixtures (`tablegraph schema
# --amplify-strict`, with the app's cli.json flags) and on what Amplify's transformer prints for
# it (the app's transformed.graphql): the queries, mutations and subscriptions an app
# regenerates against tablegraph must be those it gets against AppSync, statement for statement
# (codegen/same-statements.py). An app that tests/api/amplify_golden.rs lists as not yet served
# as the transformer makes it is reported, not failed.
#
#   bash codegen/statements-fixtures.sh [path/to/tablegraph]   # default: target/debug/tablegraph
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/target/debug/tablegraph}"
bash "$root/codegen/run.sh" install
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
same=0
for app in "$root"/tests/fixtures/amplify/*/ "$root"/tests/fixtures/amplify-golden/*/; do
  app="${app%/}"
  name="${app#"$root"/}"
  [[ -f "$app/schema.graphql" ]] || continue
  unmatched=false
  grep -q "\"$name\"," "$root/tests/api/amplify_golden.rs" && unmatched=true
  dir="$work/$(basename "$app")"
  mkdir -p "$dir/amplify"
  cp "$app/schema.graphql" "$dir/schema.graphql"
  # Its conflict detection (DataStore), read beside the schema as Amplify's project keeps it.
  [[ -f "$app/transform.conf.json" ]] && cp "$app/transform.conf.json" "$dir/transform.conf.json"
  flags=()
  extra=""
  [[ -f "$app/transform.args" ]] && extra="$(cat "$app/transform.args")"
  if [[ -f "$app/amplify-cli.json" ]]; then
    cp "$app/amplify-cli.json" "$dir/amplify/cli.json"
  elif [[ " $extra " == *" --v1 "* ]]; then
    # A v1 project without a cli.json: an existing project's flags, as the transformer reads it.
    echo '{"features":{"graphqltransformer":{}}}' > "$dir/amplify/cli.json"
  fi
  read -r -a words <<< "$extra"
  for ((i = 0; i < ${#words[@]}; i++)); do
    if [[ "${words[$i]}" == "--flag" ]]; then
      flags+=(--amplify-flag "${words[$((i + 1))]}")
    fi
  done
  if ! "$bin" schema --schema "$dir/schema.graphql" --amplify-strict "${flags[@]}" > "$dir/served.graphql" 2> "$dir/err"; then
    $unmatched || { echo "$name: tablegraph refuses it: $(head -3 "$dir/err")" >&2; status=1; }
    continue
  fi
  node "$root/codegen/statements.mjs" "$dir/served.graphql" > "$dir/served.json" 2> "$dir/err" || { echo "$name: the generator fails on tablegraph's API: $(head -5 "$dir/err")" >&2; status=1; continue; }
  node "$root/codegen/statements.mjs" "$app/transformed.graphql" > "$dir/golden.json" 2> "$dir/err" || { echo "$name: the generator fails on the transformer's API" >&2; status=1; continue; }
  # Each statement's text must be the same; the order the root fields come in (which the
  # transformer varies with the API's auth modes) changes no statement.
  if python3 "$root/codegen/same-statements.py" "$dir/golden.json" "$dir/served.json" > "$dir/diff"; then
    same=$((same + 1))
    # An app listed as unmatched may differ where no statement looks (a relation's arguments).
    $unmatched && echo "$name: the same statements (its API is listed as unmatched in tests/api/amplify_golden.rs)"
  elif $unmatched; then
    echo "$name: statements differ (listed as unmatched in tests/api/amplify_golden.rs)"
  else
    echo "$name: the statements generated from tablegraph's API are not those from the transformer's:" >&2
    head -40 "$dir/diff" >&2
    status=1
  fi
done
echo "$same apps: the same statements from tablegraph's API as from the transformer's"
exit $status
