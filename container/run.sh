#!/usr/bin/env bash
# Builds the real Dockerfile and proves the image as a deployment would use it, on this machine
# only (nothing leaves loopback):
#   - the image runs as uid 65532 and has no shell;
#   - its HEALTHCHECK turns healthy;
#   - a mutation and a query answer;
#   - data survives a new container on the same named volume;
#   - `docker stop` ends it within 10 s, and a request running at that moment finishes;
#   - compose.yaml: a store, a migrate job and two replicas, health-gated, serve one table.
# Base images cannot be pulled here: container/standins.sh builds stand-ins for them from Debian
# packages, passed as the Dockerfile's build arguments. dockerd runs with no bridge and no
# iptables; containers use the host's network.
# Usage (root or sudo): bash container/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n--> %s\n' "$*"; }
fail() { printf 'container: FAILED: %s\n' "$*" >&2; exit 1; }

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v docker-compose >/dev/null || need+=(docker-compose)
if [ "${#need[@]}" -gt 0 ]; then
  step "Install ${need[*]} (Debian packages)"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! $sudo docker info >/dev/null 2>&1; then
  step "Start dockerd (no bridge, no iptables)"
  $sudo sh -c 'nohup dockerd --bridge=none --iptables=false --ip6tables=false >/var/tmp/tablegraph-dockerd.log 2>&1 &'
  for _ in $(seq 60); do $sudo docker info >/dev/null 2>&1 && break; sleep 1; done
  $sudo docker info >/dev/null 2>&1 || { tail -n 20 /var/tmp/tablegraph-dockerd.log; fail "dockerd did not start"; }
fi
docker_bin=$(command -v docker)
docker() { $sudo "$docker_bin" "$@"; }

step "Stand-in base images"
$sudo env PATH="$PATH" RUST_SYSROOT="$(rustc --print sysroot)" bash container/standins.sh

IMAGE=${TABLEGRAPH_IMAGE:-tablegraph:ci}
step "docker build -t $IMAGE . (the Dockerfile as it is, on the stand-ins)"
started=$(date +%s)
# The classic builder: BuildKit would pull the `# syntax=` frontend image.
$sudo env DOCKER_BUILDKIT=0 "$docker_bin" build --network host \
  --build-arg RUST_IMAGE=tablegraph-standin/rust:bookworm \
  --build-arg RUNTIME_IMAGE=tablegraph-standin/distroless-cc:nonroot \
  -t "$IMAGE" . >/var/tmp/tablegraph-docker-build.log 2>&1 \
  || { tail -n 40 /var/tmp/tablegraph-docker-build.log; fail "docker build"; }
echo "built in $(( $(date +%s) - started )) s"
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
echo "image size: $(( size / 1000000 )) MB ($size bytes)"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/graphql"
volume="tablegraph-ci-data-$$"
cleanup() {
  docker rm -f tablegraph-ci-1 tablegraph-ci-2 >/dev/null 2>&1 || true
  docker volume rm -f "$volume" >/dev/null 2>&1 || true
  if [ -n "${compose_project:-}" ]; then
    compose down -v >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

graphql() { # graphql QUERY [URL] → the answer's JSON
  python3 - "${2:-$url}" "$1" <<'PY'
import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1], data=json.dumps({"query": sys.argv[2]}).encode(),
                                 headers={"content-type": "application/json"})
print(urllib.request.urlopen(request, timeout=30).read().decode())
PY
}

wait_healthy() { # wait_healthy CONTAINER
  for _ in $(seq 90); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "$1")
    [ "$status" = healthy ] && return 0
    [ "$(docker inspect -f '{{.State.Running}}' "$1")" = true ] || { docker logs "$1" | tail -n 20; fail "$1 exited"; }
    sleep 1
  done
  docker logs "$1" | tail -n 20
  fail "$1 is $status after 90 s"
}

wait_ready() { # wait_ready CONTAINER: healthy (alive) is not yet serving; /readyz says when it is
  for _ in $(seq 90); do
    docker exec "$1" /usr/local/bin/tablegraph healthcheck --ready >/dev/null 2>&1 && return 0
    [ "$(docker inspect -f '{{.State.Running}}' "$1")" = true ] || { docker logs "$1" | tail -n 20; fail "$1 exited"; }
    sleep 1
  done
  docker logs "$1" | tail -n 20
  fail "$1 is not ready after 90 s"
}

run() { # run NAME [docker run options...]
  local name=$1; shift
  docker run -d --name "$name" --network host -v "$volume:/app/data" \
    -e TABLEGRAPH_LISTEN="127.0.0.1:$port" "$@" "$IMAGE" >/dev/null
}

step "No shell in the image"
if said=$(docker run --rm --network none --entrypoint /bin/sh "$IMAGE" -c true 2>&1); then
  fail "/bin/sh ran in the image"
fi
case "$said" in
  *"no such file or directory"*|*"executable file not found"*) echo "ok: there is no /bin/sh" ;;
  *) fail "docker run failed for another reason: $said" ;;
esac

step "Runs as uid 65532 and turns healthy"
[ "$(docker image inspect -f '{{.Config.User}}' "$IMAGE")" = 65532:65532 ] || fail "USER is not 65532:65532"
run tablegraph-ci-1
wait_healthy tablegraph-ci-1
wait_ready tablegraph-ci-1
pid=$(docker inspect -f '{{.State.Pid}}' tablegraph-ci-1)
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[ "$uids" = "65532 65532 65532 65532" ] || fail "the process runs with uids $uids"
echo "ok: healthy, process $pid runs as uid 65532"

step "A mutation and a query answer"
created=$(graphql 'mutation { createFarm(input: { name: "Container Farm" }) { id name } }')
echo "$created"
id=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["data"]["createFarm"]["id"])' "$created")
read=$(graphql "{ farm(id: \"$id\") { name } }")
echo "$read"
[ "$read" = '{"data":{"farm":{"name":"Container Farm"}}}' ] || fail "the query did not read the farm"

step "docker stop with nothing running"
docker stop tablegraph-ci-1 >/dev/null
[ "$(docker inspect -f '{{.State.ExitCode}}' tablegraph-ci-1)" = 0 ] || fail "exit code $(docker inspect -f '{{.State.ExitCode}}' tablegraph-ci-1)"
docker rm tablegraph-ci-1 >/dev/null

step "Data survives: a new container on the same volume reads it"
# Each storage call of this container takes 1 s, so a request can be caught running.
run tablegraph-ci-2 -e TABLEGRAPH_SIMULATED_LATENCY_MS=1000
wait_healthy tablegraph-ci-2
wait_ready tablegraph-ci-2
read=$(graphql '{ farmByName(name: "container farm") { id name } }')
echo "$read"
[ "$read" = "{\"data\":{\"farmByName\":{\"id\":\"$id\",\"name\":\"Container Farm\"}}}" ] || fail "the farm did not survive"

step "docker stop while a request runs: the request finishes, the container ends within 10 s"
calls() {
  python3 - "http://127.0.0.1:$port/metrics" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
print(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
          if line.startswith("tablegraph_storage_calls_total")))
PY
}
before=$(calls)
# Three storage calls in a row (unique value, node, cows): about 3 s.
graphql '{ farmByName(name: "container farm") { name cows(first: 5) { edges { node { id } } } } }' \
  >/var/tmp/tablegraph-ci-running.json 2>&1 &
running=$!
# Running once its first storage call is counted; two more are to come.
for _ in $(seq 100); do
  [ "$(calls)" != "$before" ] && break
  sleep 0.1
done
[ "$(calls)" != "$before" ] || fail "the request did not start"
started=$(date +%s.%N)
docker stop tablegraph-ci-2 >/dev/null
took=$(python3 -c "import sys; print(round($(date +%s.%N) - $started, 1))")
wait "$running" || fail "the running request got no answer: $(cat /var/tmp/tablegraph-ci-running.json)"
answer=$(cat /var/tmp/tablegraph-ci-running.json)
echo "stopped in $took s; the running request answered $answer"
[ "$answer" = '{"data":{"farmByName":{"name":"Container Farm","cows":{"edges":[]}}}}' ] \
  || fail "the running request did not finish"
python3 -c "import sys; sys.exit(0 if $took < 10 else 1)" || fail "docker stop took $took s"
[ "$(docker inspect -f '{{.State.ExitCode}}' tablegraph-ci-2)" = 0 ] || fail "exit code $(docker inspect -f '{{.State.ExitCode}}' tablegraph-ci-2)"
docker rm tablegraph-ci-2 >/dev/null

step "compose.yaml: a store, a migrate job that runs first, two replicas on one table"
compose_project="tablegraph-ci-$$"
compose() {
  $sudo env TABLEGRAPH_IMAGE="$IMAGE" TABLEGRAPH_CURSOR_KEY="ci-cursor-key-$$" \
    docker-compose -p "$compose_project" "$@"
}
container_of() { # container_of SERVICE → its container's id, running or not
  docker ps -a -q --filter "label=com.docker.compose.project=$compose_project" \
    --filter "label=com.docker.compose.service=$1"
}
compose up -d >/var/tmp/tablegraph-compose.log 2>&1 \
  || { cat /var/tmp/tablegraph-compose.log; compose logs | tail -n 40; fail "docker-compose up"; }
for service in api-1 api-2; do
  wait_healthy "$(container_of "$service")"
  wait_ready "$(container_of "$service")"
done
migrate=$(container_of migrate)
[ "$(docker inspect -f '{{.State.ExitCode}}' "$migrate")" = 0 ] || fail "the migrate job failed"
migrated=$(docker inspect -f '{{.State.FinishedAt}}' "$migrate")
for service in api-1 api-2; do
  began=$(docker inspect -f '{{.State.StartedAt}}' "$(container_of "$service")")
  [ "$(date -d "$began" +%s%N)" -gt "$(date -d "$migrated" +%s%N)" ] \
    || fail "$service started ($began) before migrate ended ($migrated)"
done
echo "ok: migrate ended at $migrated, then both replicas started and turned healthy"
created=$(graphql 'mutation { createFarm(input: { name: "Replicated" }) { id } }' http://127.0.0.1:8081/graphql)
echo "replica 1: $created"
id=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["data"]["createFarm"]["id"])' "$created")
read=$(graphql '{ farmByName(name: "replicated") { id } }' http://127.0.0.1:8082/graphql)
echo "replica 2: $read"
[ "$read" = "{\"data\":{\"farmByName\":{\"id\":\"$id\"}}}" ] || fail "replica 2 did not read what replica 1 wrote"
compose down -v >/dev/null 2>&1
compose_project=""

echo
echo "container: all checks passed ($IMAGE, $(( size / 1000000 )) MB)"
