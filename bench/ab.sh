#!/usr/bin/env bash
# Two builds of tablegraph, alternated on the benchmark's data set: the Koan page (W2) at 1 and
# at AB_CONNECTIONS connections, then W3@200 at AB_RSS_CONNECTIONS, each build a fresh server on
# a copy of one seeded data directory, in the order A B, then B A, and so on. Prints, per round
# and side (A or B, with the binary's name), req/s and the server's CPU per request (utime +
# stime), and the peak RSS (VmHWM, reset before W3@200), then the medians.
#
#   bash bench/ab.sh /tmp/tablegraph-before target/release/tablegraph
#
# AB_ROUNDS (3), AB_SECONDS (5), AB_CONNECTIONS (32), AB_RSS_CONNECTIONS (64), AB_THREADS (2),
# AB_PORT (19900). AB_ENV_A and AB_ENV_B: variables set for that side's server only, such as
# AB_ENV_B='_RJEM_MALLOC_CONF=narenas:8' (the same binary may then be both sides).
# AB_CPUS=16: each server sees that many CPUs (a preloaded library, built here with cc, answers
# sched_getaffinity), so it starts the threads and allocator arenas it would start on such a
# machine; the time-shared cores make the CPU figures meaningless, the peak RSS is the measure.
# Needs wrk, curl and python3 (and cc for AB_CPUS).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bash bench/ab.sh BIN_A BIN_B" >&2; exit 2; }
bins=("$(realpath "$1")" "$(realpath "$2")")
read -ra env_a <<<"${AB_ENV_A:-}"
read -ra env_b <<<"${AB_ENV_B:-}"
cd "$(dirname "$0")/.."
rounds=${AB_ROUNDS:-3} secs=${AB_SECONDS:-5} conns=${AB_CONNECTIONS:-32}
rss_conns=${AB_RSS_CONNECTIONS:-64} threads=${AB_THREADS:-2} port=${AB_PORT:-19900}
work=$(mktemp -d)
trap '[ -s "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null; rm -rf "$work"' EXIT
# A fixed key, so that the cursor of W3@200's second page holds on every server.
export TABLEGRAPH_CURSOR_KEY=bench-ab-cursor-key-0123456789ab RUST_LOG=warn
url="http://127.0.0.1:$port/graphql"
preload=()
if [ -n "${AB_CPUS:-}" ]; then
  cat >"$work/cpus.c" <<'C'
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set) {
    (void)pid;
    int cpus = atoi(getenv("AB_CPUS"));
    memset(set, 0, size);
    for (int cpu = 0; cpu < cpus && (size_t)cpu < size * 8; cpu++) CPU_SET_S(cpu, size, set);
    return 0;
}
C
  cc -O2 -shared -fPIC -o "$work/cpus.so" "$work/cpus.c"
  preload=("LD_PRELOAD=$work/cpus.so" "AB_CPUS=$AB_CPUS")
fi
# shellcheck source=bench/lib.sh
source bench/lib.sh
# Each page answers without errors and with all its goals.
check() { # BODY GOALS
  ask "$1" | python3 -c "
import json, sys
data = json.load(sys.stdin)
assert 'errors' not in data, data['errors']
team = data['data']['team']
assert sum(len(page['edges']) for page in team.values()) == $2, 'goals missing'
" || fail "a wrong answer to $1"
}

start "${bins[0]}" "$work/seeded"
python3 bench/seed.py "$url" >"$work/ids.json"
stop
# The bodies bench.py sends as W2 and W3@200, from the seeded ids.
{ read -r w2; read -r w3; } < <(python3 -c "
import json, sys; sys.path.insert(0, 'bench'); import bench
ids = json.load(open('$work/ids.json')); print(bench.koan(ids, 50)); print(bench.koan(ids, 200))")
for name in w2 w3; do
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [==[%s]==]\n' \
    "${!name}" >"$work/$name.lua"
done

results="$work/rounds.txt"
measure() { # SIDE LABEL CONNECTIONS LUA: appends "round SIDE LABEL req/s N cpu_us N"
  local c0 out n c1
  c0=$(cpu)
  out=$(wrk -t"$(( $3 < threads ? $3 : threads ))" -c"$3" -d"${secs}s" --timeout 10s -s "$4" "$url")
  c1=$(cpu)
  ! grep -q -e "Non-2xx" -e "Socket errors" <<<"$out" || fail "$2: $(grep -e Non-2xx -e Socket <<<"$out")"
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  python3 -c "n=$n; print(f'round $round $1 $2 req/s {n / $secs:.0f} cpu_us {($c1 - $c0) * 1e6 / $(getconf CLK_TCK) / n:.0f}')" |
    tee -a "$results"
}
for round in $(seq "$rounds"); do
  order="0 1"
  [ $((round % 2)) -eq 0 ] && order="1 0"
  for side in $order; do
    bin=${bins[$side]}
    rm -rf "$work/data"
    cp -r "$work/seeded" "$work/data"
    if [ "$side" = 0 ]; then
      start "$bin" "$work/data" "${preload[@]}" "${env_a[@]}"
      label="A:$(basename "$bin")"
    else
      start "$bin" "$work/data" "${preload[@]}" "${env_b[@]}"
      label="B:$(basename "$bin")"
    fi
    check "$w2" 50
    check "$w3" 200
    wrk -t"$(( threads < 8 ? threads : 8 ))" -c8 -d2s -s "$work/w2.lua" "$url" >/dev/null
    measure "$label" "W2@1" 1 "$work/w2.lua"
    measure "$label" "W2@$conns" "$conns" "$work/w2.lua"
    echo 5 >"/proc/$pid/clear_refs"
    measure "$label" "W3@200@$rss_conns" "$rss_conns" "$work/w3.lua"
    awk -v r="$round" -v b="$label" -v w="W3@200@$rss_conns" \
      '/VmHWM/ {printf "round %s %s %s peak_rss_mb %.1f\n", r, b, w, $2 * 1024 / 1e6}' \
      "/proc/$pid/status" | tee -a "$results"
    stop
  done
done
medians "$results"
