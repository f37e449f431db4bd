#!/usr/bin/env bash
# Fetches the GraphiQL page's assets from npm, at the pinned versions, into this folder, and
# checks them against the SHA-256 sums in SHA256SUMS. The build embeds the files
# (src/http/graphiql.rs), so a running server needs no internet. To move to another version,
# change the versions here and in src/http/graphiql.rs, run with UPDATE=1, and commit the files.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
graphiql=4.0.3
react=18.3.1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "graphiql@$graphiql" "react@$react" "react-dom@$react" >/dev/null
for package in "graphiql-$graphiql" "react-$react" "react-dom-$react"; do
  mkdir "$package" && tar xzf "$package.tgz" -C "$package"
done
cp "graphiql-$graphiql/package/graphiql.min.js" "$here/graphiql-$graphiql.min.js"
cp "graphiql-$graphiql/package/graphiql.min.css" "$here/graphiql-$graphiql.min.css"
cp "graphiql-$graphiql/package/LICENSE" "$here/LICENSE.graphiql"
cp "react-$react/package/umd/react.production.min.js" "$here/react-$react.min.js"
cp "react-$react/package/LICENSE" "$here/LICENSE.react"
cp "react-dom-$react/package/umd/react-dom.production.min.js" "$here/react-dom-$react.min.js"
cp "react-dom-$react/package/LICENSE" "$here/LICENSE.react-dom"
cd "$here"
if [[ ${UPDATE:-} == 1 ]]; then
  sha256sum ./*.js ./*.css > SHA256SUMS
fi
sha256sum --check --quiet SHA256SUMS
echo "assets match SHA256SUMS"
