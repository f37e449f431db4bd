# Sourced by conformance/run.sh, clients/run.sh, deploy/prometheus/check.sh and
# bench/subscriptions.sh.
#
#   start_server BIN [ARGS...]  starts `BIN serve --memory ARGS...` on a free loopback port and
#                               waits until it answers; sets $listen and $server. SERVE_STORE
#                               replaces `--memory` (e.g. `--data-dir DIR`).
#   stop_server                 stops it (also done when the script exits)

start_server() {
  local bin=$1
  shift
  local port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  listen="127.0.0.1:$port"
  server_log="$(mktemp)"
  # shellcheck disable=SC2086 # SERVE_STORE is a flag and its value
  "$bin" serve ${SERVE_STORE:---memory} --listen "$listen" "$@" >"$server_log" 2>&1 &
  server=$!
  trap stop_server EXIT
  for _ in $(seq 1 150); do
    if "$bin" healthcheck --listen "$listen" 2>/dev/null; then return 0; fi
    if ! kill -0 "$server" 2>/dev/null; then
      cat "$server_log"
      echo "the server exited" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "the server did not answer in 30 s" >&2
  return 1
}

stop_server() {
  if [[ -n ${server:-} ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
  fi
  rm -f "${server_log:-}"
}
