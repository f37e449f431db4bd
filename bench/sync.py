#!/usr/bin/env python3
"""What DataStore's sync queries cost: a base sync of a type of N nodes against a delta sync of
the M writes made since, on the embedded store.

It serves tests/fixtures/amplify-datastore/schema.graphql (conflict detection on; `Note` by
AUTOMERGE) in memory, creates N notes, then times a base sync (`syncNotes(lastSync: 0)`, pages
of 1,000 through the whole type), updates M of the notes, and times a delta sync
(`syncNotes(lastSync: <the base sync's startedAt>)`, which reads the type's delta record).
Each sync is run --rounds times; the median is reported, with the storage calls and items of
one run (`x-tablegraph-storage-calls`), which do not vary.

    python3 bench/sync.py [--binary target/release/tablegraph] [--nodes 10000] [--changes 100]
                          [--rounds 5] [--json FILE]

Standard library only.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

SCHEMA = "tests/fixtures/amplify-datastore/schema.graphql"
SYNC = """query($last: AWSTimestamp, $next: String) {
  syncNotes(lastSync: $last, limit: 1000, nextToken: $next) {
    items { id title _version _deleted _lastChangedAt } nextToken startedAt
  }
}"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, query, variables, counted=False):
    body = json.dumps({"query": query, "variables": variables}).encode()
    headers = {"content-type": "application/json"}
    if counted:
        headers["x-tablegraph-storage-calls"] = "1"
    request = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)
    if answer.get("errors"):
        sys.exit(f"{query[:60]}…: {answer['errors']}")
    return answer


def serve(binary, port):
    env = dict(os.environ, RUST_LOG="warn")
    server = subprocess.Popen(
        [binary, "serve", "--memory", "--schema", SCHEMA, "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
            return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    sys.exit("the server did not start")


def sync(url, last_sync):
    """One whole sync: its seconds, items, startedAt and the storage calls of its pages."""
    started = time.perf_counter()
    items, calls, next_token, started_at = 0, [], None, None
    while True:
        answer = post(url, SYNC, {"last": last_sync, "next": next_token}, counted=True)
        page = answer["data"]["syncNotes"]
        items += len(page["items"])
        calls += answer["extensions"]["storageCalls"]
        started_at = started_at or page["startedAt"]
        next_token = page["nextToken"]
        if next_token is None:
            return time.perf_counter() - started, items, started_at, calls


def summary(calls):
    """Calls by operation, with the items they read or the keys they asked for."""
    by = {}
    for call in calls:
        name = call["operation"] + (f":{call['index']}" if call.get("index") else "")
        count, items = by.get(name, (0, 0))
        by[name] = (count + 1, items + (call.get("items") or call.get("keys") or 0))
    return {name: {"calls": n, "items": items} for name, (n, items) in sorted(by.items())}


def measure(binary, nodes, changes, rounds):
    port = free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    server = serve(binary, port)
    try:
        create = "mutation($t: String!) { createNote(input: { title: $t }) { id } }"
        with ThreadPoolExecutor(8) as pool:
            ids = list(
                pool.map(
                    lambda n: post(url, create, {"t": f"note {n}"})["data"]["createNote"]["id"],
                    range(nodes),
                )
            )
        base = [sync(url, 0) for _ in range(rounds)]
        if any(items != nodes for _, items, _, _ in base):
            sys.exit(f"a base sync answered {[b[1] for b in base]} of {nodes} notes")
        last_sync = base[-1][2]
        update = "mutation($id: ID!) { updateNote(input: { id: $id, title: \"changed\", _version: 1 }) { id } }"
        for node_id in ids[:changes]:
            post(url, update, {"id": node_id})
        delta = [sync(url, last_sync) for _ in range(rounds)]
        if any(items != changes for _, items, _, _ in delta):
            sys.exit(f"a delta sync answered {[d[1] for d in delta]} of {changes} changes")
        return {
            "nodes": nodes,
            "changes": changes,
            "base_sync_ms": round(statistics.median(b[0] for b in base) * 1000, 1),
            "base_sync_calls": summary(base[0][3]),
            "delta_sync_ms": round(statistics.median(d[0] for d in delta) * 1000, 1),
            "delta_sync_calls": summary(delta[0][3]),
        }
    finally:
        server.kill()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/tablegraph")
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    figures = measure(args.binary, args.nodes, args.changes, args.rounds)
    print(
        f"base sync of {figures['nodes']} notes: {figures['base_sync_ms']} ms "
        f"{figures['base_sync_calls']}\n"
        f"delta sync of {figures['changes']} changes: {figures['delta_sync_ms']} ms "
        f"{figures['delta_sync_calls']}",
        flush=True,
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
