#!/usr/bin/env bash
# Reads beside writes in memory, two builds alternated: a one-item read (W1) from
# MIXED_READERS connections, alone and then beside `createFarm` (W4) from MIXED_WRITERS
# connections, each build a fresh `serve --memory` seeded with seed.py, in the order A B, then
# B A, and so on. Prints, per round and side, W1's req/s, p50 and p99 alone and beside the
# writes, and the writes' own, then the medians.
#
#   bash bench/mixed.sh /tmp/tablegraph-before target/release/tablegraph
#
# MIXED_ROUNDS (4), MIXED_SECONDS (8), MIXED_READERS (16), MIXED_WRITERS (2), MIXED_PORT (19910).
# Needs wrk, curl and python3.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bash bench/mixed.sh BIN_A BIN_B" >&2; exit 2; }
bins=("$(realpath "$1")" "$(realpath "$2")")
cd "$(dirname "$0")/.."
rounds=${MIXED_ROUNDS:-4} secs=${MIXED_SECONDS:-8} readers=${MIXED_READERS:-16}
writers=${MIXED_WRITERS:-2} port=${MIXED_PORT:-19910}
work=$(mktemp -d)
writes=
# On the way out: the writes' wrk if it still runs (found by its script, in this run's folder),
# then the server.
trap '[ -n "$writes" ] && pkill -f -- "$work/w4.lua"; [ -s "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
  rm -rf "$work"' EXIT
export RUST_LOG=warn
url="http://127.0.0.1:$port/graphql"
# shellcheck source=bench/lib.sh
source bench/lib.sh

# W4's body, as bench.py sends it, with a name of its own per request.
python3 -c "
import sys; sys.path.insert(0, 'bench'); import bench
print('wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"')
print('local template = ' + bench.lua_long(bench.W4_TEMPLATE))
print('local counter = 0')
print('function request()\n  counter = counter + 1')
print('  return wrk.format(nil, nil, nil, string.format(template, \"mixed\", 0, counter))\nend')
" >"$work/w4.lua"

results="$work/rounds.txt"
measure() { # SIDE LABEL CONNECTIONS LUA: prints "round SIDE LABEL req/s N p50_ms N p99_ms N"
  local out
  out=$(wrk -t"$(( $3 < 2 ? $3 : 2 ))" -c"$3" -d"${secs}s" --latency --timeout 10s -s "$4" "$url")
  ! grep -q -e "Non-2xx" -e "Socket errors" <<<"$out" || fail "$2: $(grep -e Non-2xx -e Socket <<<"$out")"
  python3 -c "
import re, sys
out = sys.stdin.read()
ms = {p: float(v) * {'us': 1e-3, 'ms': 1, 's': 1e3}[u]
      for p, v, u in re.findall(r'^\s+(50|99)%\s+([\d.]+)(us|ms|s)$', out, re.M)}
rate = float(re.search(r'Requests/sec:\s+([\d.]+)', out).group(1))
print(f'round $round $1 $2 req/s {rate:.0f} p50_ms {ms[\"50\"]:.2f} p99_ms {ms[\"99\"]:.2f}')
 " <<<"$out"
}
for round in $(seq "$rounds"); do
  order="0 1"
  [ $((round % 2)) -eq 0 ] && order="1 0"
  for side in $order; do
    bin=${bins[$side]}
    start "$bin" --memory
    label="$([ "$side" = 0 ] && echo A || echo B):$(basename "$bin")"
    python3 bench/seed.py "$url" >"$work/ids.json"
    # W1's body, as bench.py sends it, and a check that it reads the seeded farm.
    python3 -c "
import json, sys; sys.path.insert(0, 'bench'); import bench
body, valid = bench.read_bodies(json.load(open('$work/ids.json')))['W1']
print('wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"')
print('wrk.body = ' + bench.lua_long(body))
open('$work/w1.json', 'w').write(body)
" >"$work/w1.lua"
    ask "@$work/w1.json" | python3 -c "
import json, sys; sys.path.insert(0, 'bench'); import bench
ids = json.load(open('$work/ids.json'))
assert bench.read_bodies(ids)['W1'][1](json.load(sys.stdin)['data'])" || fail "W1 does not read the seeded farm"
    ask "$(python3 -c "import sys; sys.path.insert(0, 'bench'); import bench
print(bench.W4_TEMPLATE % ('check', 0, 0))")" | python3 -c "
import json, sys; assert json.load(sys.stdin)['data']['createFarm']['id']" || fail "W4 does not create a farm"
    wrk -t2 -c"$readers" -d2s -s "$work/w1.lua" "$url" >/dev/null
    measure "$label" "W1-alone" "$readers" "$work/w1.lua" | tee -a "$results"
    measure "$label" "W4-beside" "$writers" "$work/w4.lua" >"$work/writes.txt" &
    writes=$!
    measure "$label" "W1-beside-W4" "$readers" "$work/w1.lua" | tee -a "$results"
    wait "$writes"
    writes=
    tee -a "$results" <"$work/writes.txt"
    stop
  done
done
medians "$results"
