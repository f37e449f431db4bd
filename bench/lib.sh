# Shell functions of the scripts that start tablegraph servers themselves (ab.sh, mixed.sh):
# sourced after `url`, `port` and `work` (a scratch directory) are set.

ask() { curl -sf "$url" -H 'content-type: application/json' -d "$1"; }
fail() { echo "bench/$(basename "$0"): $*" >&2; exit 1; }
# Starts BIN on `port` with the store STORE (a data directory, or --memory) and the variables
# given, and waits until it answers; its pid is in `pid` and in $work/pid (for an exit trap).
start() { # BIN STORE [VARIABLE=VALUE...]
  ! ask '{"query":"{ __typename }"}' >/dev/null || fail "something answers on port $port already"
  local bin=$1 store=(--data-dir "$2")
  [ "$2" = --memory ] && store=(--memory)
  shift 2
  env "$@" "$bin" serve "${store[@]}" --listen "127.0.0.1:$port" \
    >"$work/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$work/pid"
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "$bin stopped"; }
    ask '{"query":"{ __typename }"}' >/dev/null && return
    sleep 0.1
  done
  fail "$bin did not answer"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; : >"$work/pid"; }
# The server's CPU time so far, in clock ticks (utime + stime).
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# Prints the medians of the lines `round N SIDE LOAD NAME VALUE [NAME VALUE...]` in FILE, per
# side, load and name, with each round's figure.
medians() { # FILE
  python3 - "$1" <<'PY'
import collections, statistics, sys
seen = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    for i in range(4, len(f), 2):
        seen[(f[2], f[3], f[i])].append(float(f[i + 1]))
print("median over the rounds (each round's figure in brackets):")
for (side, load, what), values in seen.items():
    print(f"  {side}  {load} {what}: {statistics.median(values):,.2f}  ({' / '.join(f'{v:g}' for v in values)})")
PY
}
