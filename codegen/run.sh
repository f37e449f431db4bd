#!/usr/bin/env bash
# Runs Amplify Gen 1's own npm tooling offline (see codegen/README.md): the statement generator
# `amplify codegen` uses, and the GraphQL transformer that writes build/schema.graphql.
# Installs codegen/node_modules with `npm ci` (package-lock.json, exact versions) when it is missing.
#
#   bash codegen/run.sh statements <schema.json | schema.graphql> [--max-depth N] [--target T] ...
#   bash codegen/run.sh transform <schema.graphql | dir> [--cli-json amplify/cli.json] [--v1] ...
#   bash codegen/run.sh gen2 <dir> [--check]   # a Gen 2 resource.mjs: its SDL, its model introspection
#   bash codegen/run.sh install     # only the npm ci
#
# The statements are printed as JSON, the transformed schema as SDL, on stdout; the transformer's
# warnings go to stderr.
set -euo pipefail

dir="$(cd "$(dirname "$0")" && pwd)"
[[ -d "$dir/node_modules" ]] || (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
# The CLI's CDK stack and synthesizer (category-api's lib/graphql-transformer/cdk-compat, which
# collect the transformer's schema.graphql asset) are not a package of their own: taken from
# @aws-amplify/amplify-category-api's published tarball, pinned, without its dependencies.
compat="$dir/node_modules/.amplify-category-api-cdk-compat"
if [[ ! -f "$compat/transform-manager.js" ]]; then
  (
    cd "$dir/node_modules"
    npm pack @aws-amplify/amplify-category-api@5.15.3 --silent > /dev/null
    tar xzf aws-amplify-amplify-category-api-5.15.3.tgz package/lib/graphql-transformer/cdk-compat
    rm -rf "$compat" && mv package/lib/graphql-transformer/cdk-compat "$compat"
    echo '{ "type": "commonjs" }' > "$compat/package.json"
    rm -rf package aws-amplify-amplify-category-api-5.15.3.tgz
  ) >&2
fi

tool="${1:-}"
case "$tool" in
  statements | transform | gen2)
    shift
    exec node "$dir/$tool.mjs" "$@"
    ;;
  install) ;;
  *)
    echo "usage: bash codegen/run.sh statements|transform|gen2|install [args...]" >&2
    exit 2
    ;;
esac
