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
mkdir "$work/lua"
writes=
# On the way out: the writes' wrk if it still runs (found by its script, in this run's folder),
# then the server.
trap '[ -n "$writes" ] && pkill -f -- "$work/lua/w4.lua"; [ -s "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
  rm -rf "$work"' EXIT
export RUST_LOG=warn
url="http://127.0.0.1:$port/graphql"
# shellcheck source=bench/lib.sh
source bench/lib.sh

results="$work/rounds.txt"
measure() { # SIDE LABEL CONNECTIONS LUA: prints "round SIDE LABEL req/s N p50_ms N p99_ms N"
  local out
  out=$(wrk -t"$(( $3 < 2 ? $3 : 2 ))" -c"$3" -d"${secs}s" --latency --timeout 10s -s "$4" "$url")
  # The summary line of bench.py's scripts.
  python3 -c "
import json, sys
r = json.loads(next(l for l in sys.stdin if l.startswith('BENCHJSON '))[len('BENCHJSON '):])
errors = {k: v for k, v in r.items() if k.startswith('err_') and v}
assert not errors, f'$2: {errors}'
print(f'round $round $1 $2 req/s {r[\"requests\"] * 1e6 / r[\"duration_us\"]:.0f} '
      f'p50_ms {r[\"p50_us\"] / 1e3:.2f} p99_ms {r[\"p99_us\"] / 1e3:.2f}')
" <<<"$out" || fail "$2 failed: $out"
}
for round in $(seq "$rounds"); do
  order="0 1"
  [ $((round % 2)) -eq 0 ] && order="1 0"
  for side in $order; do
    bin=${bins[$side]}
    start "$bin" --memory
    label="$([ "$side" = 0 ] && echo A || echo B):$(basename "$bin")"
    python3 bench/seed.py "$url" >"$work/ids.json"
    # W1 and W4 as bench.py sends them, with its scripts (into lua/ in this run's folder); W1's
    # body is printed to check that it reads the seeded farm, and W4's that it creates one.
    checks=$(python3 -c "
import json, sys; sys.path.insert(0, 'bench'); import bench
bench.RUN_DIR = '$work'
body = bench.read_bodies(json.load(open('$work/ids.json')))['W1'][0]
bench.write_lua('w1', static_body=body)
bench.write_lua('w4', template=bench.W4_TEMPLATE)
print(body); print(bench.W4_TEMPLATE % ('check', 0, 0))")
    ask "$(head -1 <<<"$checks")" | grep -q '"name":"Bench Farm"' || fail "W1 does not read the seeded farm"
    ask "$(tail -1 <<<"$checks")" | grep -q '"createFarm":{"id":' || fail "W4 does not create a farm"
    wrk -t2 -c"$readers" -d2s -s "$work/lua/w1.lua" "$url" >/dev/null
    measure "$label" "W1-alone" "$readers" "$work/lua/w1.lua" | tee -a "$results"
    measure "$label" "W4-beside" "$writers" "$work/lua/w4.lua" >"$work/writes.txt" &
    writes=$!
    measure "$label" "W1-beside-W4" "$readers" "$work/lua/w1.lua" | tee -a "$results"
    wait "$writes"
    writes=
    tee -a "$results" <"$work/writes.txt"
    stop
  done
done
medians "$results"
