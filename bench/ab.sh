#!/usr/bin/env bash
# Two builds of tablegraph, alternated on the benchmark's data set: the Koan page (W2) at 1 and
# at AB_CONNECTIONS connections, then W3@200 at AB_RSS_CONNECTIONS, each build a fresh server on
# a copy of one seeded data directory. Prints, per round and build, req/s and the server's CPU
# per request (utime + stime), and the peak RSS (VmHWM, reset before W3@200), then the medians.
#
#   bash bench/ab.sh target/release/tablegraph /tmp/tablegraph-before
#
# AB_ROUNDS (3), AB_SECONDS (5), AB_CONNECTIONS (32), AB_RSS_CONNECTIONS (64), AB_THREADS (2),
# AB_PORT (19900). Needs wrk, curl and python3. bench/PROFILE.md's A/B tables come from this.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bash bench/ab.sh BIN_A BIN_B" >&2; exit 2; }
bins=("$1" "$2")
rounds=${AB_ROUNDS:-3} secs=${AB_SECONDS:-5} conns=${AB_CONNECTIONS:-32}
rss_conns=${AB_RSS_CONNECTIONS:-64} threads=${AB_THREADS:-2} port=${AB_PORT:-19900}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
# A fixed key, so that the cursor of W3@200's second page holds on every server.
export TABLEGRAPH_CURSOR_KEY=bench-ab-cursor-key-0123456789ab RUST_LOG=warn
url() { echo "http://127.0.0.1:$port/graphql"; }
ask() { curl -sf "$(url)" -H 'content-type: application/json' -d "$1"; }
start() { # BIN DATA_DIR
  "$1" serve --data-dir "$2" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do ask '{"query":"{ __typename }"}' >/dev/null && return; sleep 0.1; done
  cat "$work/server.log" >&2; exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

start "${bins[0]}" "$work/seeded"
python3 bench/seed.py "$(url)" >"$work/ids.json"
team=$(python3 -c "import json; print(json.load(open('$work/ids.json'))['team'])")
koan='edges { role node { title leads { name } teams { name } } }'
w2="{\"query\":\"query(\$team: ID!) { team(id: \$team) { goals(first: 50) { $koan } } }\",\"variables\":{\"team\":\"$team\"}}"
after=$(ask "{\"query\":\"{ team(id: \\\"$team\\\") { goals(first: 100) { pageInfo { endCursor } } } }\"}" |
  python3 -c "import json, sys; print(json.load(sys.stdin)['data']['team']['goals']['pageInfo']['endCursor'])")
w3="{\"query\":\"query(\$team: ID!, \$after: String) { team(id: \$team) { page1: goals(first: 100) { $koan } page2: goals(first: 100, after: \$after) { $koan } } }\",\"variables\":{\"team\":\"$team\",\"after\":\"$after\"}}"
stop
for name in w2 w3; do
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [==[%s]==]\n' \
    "${!name}" >"$work/$name.lua"
done

measure() { # LABEL CONNECTIONS LUA -> "LABEL req/s cpu_us"
  local c0 n c1
  c0=$(cpu)
  n=$(wrk -t"$(( $2 < threads ? $2 : threads ))" -c"$2" -d"${secs}s" -s "$3" "$(url)" |
    awk '/requests in/ {print $1}')
  c1=$(cpu)
  python3 -c "n=$n; print(f'$1 {n / $secs:.0f} {($c1 - $c0) * 1e6 / $(getconf CLK_TCK) / n:.0f}')"
}
for round in $(seq "$rounds"); do
  for side in 0 1; do
    rm -rf "$work/data"; cp -r "$work/seeded" "$work/data"
    start "${bins[$side]}" "$work/data"
    wrk -t2 -c8 -d2s -s "$work/w2.lua" "$(url)" >/dev/null
    lines=$(measure "W2@1" 1 "$work/w2.lua"; measure "W2@$conns" "$conns" "$work/w2.lua")
    echo 5 >"/proc/$pid/clear_refs"
    lines+=$'\n'$(measure "W3@200@$rss_conns" "$rss_conns" "$work/w3.lua")
    hwm=$(awk '/VmHWM/ {printf "%.1f", $2 * 1024 / 1e6}' "/proc/$pid/status")
    stop
    while read -r label rps us; do
      echo "round $round ${bins[$side]} $label req/s $rps cpu_us $us"
    done <<<"$lines"
    echo "round $round ${bins[$side]} peak_rss_mb $hwm"
  done
done | tee "$work/rounds.txt"
python3 - "$work/rounds.txt" <<'EOF'
import collections, statistics, sys
seen = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[3] == "peak_rss_mb":
        seen[(f[2], "peak RSS MB")].append(float(f[4]))
    else:
        seen[(f[2], f[3] + " req/s")].append(float(f[5]))
        seen[(f[2], f[3] + " CPU us/req")].append(float(f[7]))
print("median over the rounds:")
for (binary, what), values in seen.items():
    print(f"  {binary}  {what}: {statistics.median(values):,.1f}  ({' / '.join(f'{v:g}' for v in values)})")
EOF
