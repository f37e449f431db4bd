#!/usr/bin/env bash
# One cold start, for hyperfine: launch `tablegraph serve --memory`, poll until the first
# `{ __typename }` query answers 200, then kill the server (SIGKILL, so shutdown is not timed)
# and exit. Polls through bash's /dev/tcp every 2 ms without forking, so the poller adds
# almost nothing to the measured time.
#
#   bash bench/cold_start.sh target/release/tablegraph 18090
#
# Run it from the repository root (the server reads ./schema.graphql).
set -uo pipefail
bin=${1:?usage: cold_start.sh TABLEGRAPH_BINARY PORT}
port=${2:?usage: cold_start.sh TABLEGRAPH_BINARY PORT}
deadline_s=${COLD_START_TIMEOUT_S:-30}

"$bin" serve --memory --listen "127.0.0.1:$port" >/dev/null 2>&1 &
server=$!
trap 'kill -9 "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT

body='{"query":"{ __typename }"}'
request=$'POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: '"${#body}"$'\r\nConnection: close\r\n\r\n'"$body"
# A pipe nobody writes to: `read -t` on it sleeps without starting a process.
exec {pause}<> <(:)
start=$EPOCHREALTIME
while :; do
    if { exec {conn}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
        printf '%s' "$request" >&"$conn"
        status=''
        IFS= read -r -t 5 status <&"$conn"
        exec {conn}>&-
        if [[ $status == "HTTP/1.1 200"* ]]; then
            exit 0
        fi
    fi
    if ! kill -0 "$server" 2>/dev/null; then
        echo "cold_start.sh: the server exited before answering" >&2
        exit 1
    fi
    now=$EPOCHREALTIME
    if (( ${now%.*} - ${start%.*} > deadline_s )); then
        echo "cold_start.sh: no answer within ${deadline_s}s" >&2
        exit 1
    fi
    read -r -t 0.002 -u "$pause" _ || true
done
