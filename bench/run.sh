#!/usr/bin/env bash
# The tablegraph benchmarks, in one command (from anywhere in the repository):
#
#   bash bench/run.sh                        # the full run: 10 s per measurement, 3 repetitions
#   BENCH_DURATION=3s bash bench/run.sh      # a quick look
#
# Builds tablegraph and the baselines (B0, B1, B2) in release mode, installs wrk and hyperfine
# when missing, and valgrind when it can (Debian/Ubuntu: apt-get), then runs bench/bench.py:
# starts B0, B1, B2 and tablegraph (the in-memory embedded store, seeded by bench/seed.py),
# measures every workload, and writes BENCHMARKS.md at the repository root. Raw data goes to
# bench/results/<UTC time>/.
#
# Settings (environment): BENCH_DURATION (10s), BENCH_REPS (3), BENCH_CONNECTIONS ("1 32"),
# BENCH_THREADS (2), BENCH_CHECK_DURATION (3s), BENCH_WARMUP (2s), BENCH_COLD_RUNS (20),
# BENCH_LATENCY_MS (5), BENCH_PORT_BASE (18080; ports BASE..BASE+7), BENCH_OUT (BENCHMARKS.md),
# BENCH_PHASES ("throughput latency cold instructions"), BENCH_NOTE (a line for the report's header),
# BENCH_SKIP_BUILD=1 (use the binaries already built). See bench/README.md.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

run_dir="$root/bench/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$run_dir"
export BENCH_RUN_DIR="$run_dir"

# Every server the driver starts is listed in $run_dir/pids ("PID BINARY"); whatever is still
# running when this script exits, however it exits, is stopped here, by id.
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n ${driver:-} ]] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        wait "$driver" 2>/dev/null || true
    fi
    if [[ -f $run_dir/pids ]]; then
        while read -r pid binary; do
            # Only a process still running that binary (never a recycled pid).
            if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$binary" ]]; then
                kill -TERM "$pid" 2>/dev/null || true
                sleep 0.2
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done <"$run_dir/pids"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Tools.
missing=()
for tool in wrk hyperfine; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "installing ${missing[*]} ..."
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y "${missing[@]}"
fi
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 1; }
# valgrind counts instructions per request (the "instructions" phase); without it, and where it
# cannot be installed, that phase is skipped.
phases=" ${BENCH_PHASES:-instructions} "
if ! command -v valgrind >/dev/null && [[ ${phases//,/ } == *" instructions "* ]]; then
    echo "installing valgrind ..."
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y valgrind; } ||
        echo "could not install valgrind: instructions per request will not be counted"
fi

# Builds.
if [[ ${BENCH_SKIP_BUILD:-} != 1 ]]; then
    echo "building tablegraph (release) ..."
    cargo build --release --locked
    echo "building the baselines B0 and B1 (release) ..."
    (cd bench/baselines && cargo build --release --locked)
fi

# The exact command, for the report.
command_line="bash bench/run.sh"
for var in $(compgen -e | grep '^BENCH_' | grep -v -e '^BENCH_RUN_DIR$' -e '^BENCH_COMMAND$' | sort); do
    command_line="$var=${!var@Q} $command_line"
done
export BENCH_COMMAND="$command_line"

python3 bench/bench.py &
driver=$!
wait "$driver"
