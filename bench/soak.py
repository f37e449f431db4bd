#!/usr/bin/env python3
"""W6, the write soak: `createFarm` (a node and its unique name, one TransactWriteItems) from
8 connections for 10 minutes against `tablegraph serve` on the embedded store in a fresh data
directory, measured one minute at a time: requests per second, errors, the server's CPU per
request and its resident memory at the end of each minute. A store that slows down or keeps
growing under sustained writes shows as a falling rate or a rising RSS column.

    python3 bench/soak.py                       # 10 x 60 s, 8 connections
    SOAK_MINUTES=3 SOAK_CONNECTIONS=4 python3 bench/soak.py

Needs target/release/tablegraph (bench/run.sh builds it; or set SOAK_BINARY) and wrk. Prints a
Markdown table; BENCHMARKS.md records the runs with the machine named. Standard library only.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("SOAK_BINARY", os.path.join(ROOT, "target", "release", "tablegraph"))
MINUTES = int(os.environ.get("SOAK_MINUTES", "10"))
SLICE = int(os.environ.get("SOAK_SLICE_SECONDS", "60"))
CONNECTIONS = int(os.environ.get("SOAK_CONNECTIONS", "8"))
PORT = int(os.environ.get("SOAK_PORT", "18190"))
CLK_TCK = os.sysconf("SC_CLK_TCK")

LUA = r"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local template = '{"query":"mutation($input: CreateFarmInput!) { createFarm(input: $input) { id } }","variables":{"input":{"name":"W6 %s %d"}}}'
local threads = {}
counter = 0
prefix = ""
errors = 0
function setup(thread)
  table.insert(threads, thread)
  thread:set("prefix", os.getenv("SOAK_PREFIX") .. "-" .. #threads)
end
function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, string.format(template, prefix, counter))
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"createFarm":{"id"', 1, true) then
    errors = errors + 1
  end
end
function done(summary, latency, requests)
  local failed = 0
  for _, thread in ipairs(threads) do failed = failed + thread:get("errors") end
  io.write(string.format("SOAK %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), failed))
end
"""


def wait_for_port(port, deadline):
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    sys.exit("the server did not start")


def proc_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    if not os.path.exists(BINARY):
        sys.exit(f"{BINARY} is missing: cargo build --release")
    work = tempfile.mkdtemp(prefix="tablegraph-soak-")
    script = os.path.join(work, "w6.lua")
    with open(script, "w") as f:
        f.write(LUA)
    server = subprocess.Popen(
        [BINARY, "serve", "--schema", os.path.join(ROOT, "schema.graphql"),
         "--data-dir", os.path.join(work, "data"), "--listen", f"127.0.0.1:{PORT}"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "w"),
        env={**os.environ, "RUST_LOG": "warn"})
    try:
        wait_for_port(PORT, time.time() + 30)
        rows = []
        for minute in range(1, MINUTES + 1):
            ticks = proc_ticks(server.pid)
            done = subprocess.run(
                ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SLICE}s", "--timeout", "10s", "-s", script,
                 f"http://127.0.0.1:{PORT}/graphql"],
                capture_output=True, text=True,
                env={**os.environ, "SOAK_PREFIX": f"{os.getpid()}-{minute}"})
            ticks = proc_ticks(server.pid) - ticks
            line = next((l for l in done.stdout.splitlines() if l.startswith("SOAK ")), None)
            if done.returncode != 0 or line is None:
                sys.exit(f"wrk failed: {done.stderr or done.stdout[-400:]}")
            requests, duration_us, p50_us, failed = map(int, line.split()[1:])
            row = {
                "minute": minute,
                "rps": requests / (duration_us / 1e6),
                "p50_ms": p50_us / 1000,
                "cpu_us": ticks / CLK_TCK * 1e6 / max(requests, 1),
                "rss_mb": rss_mb(server.pid),
                "errors": failed,
            }
            rows.append(row)
            print(f"minute {minute}: {row['rps']:.0f} req/s, p50 {row['p50_ms']:.1f} ms, "
                  f"{row['cpu_us']:.0f} us CPU/req, RSS {row['rss_mb']:.0f} MB, "
                  f"{failed} errors", file=sys.stderr, flush=True)
        print(f"W6: createFarm, {CONNECTIONS} connections, {MINUTES} x {SLICE} s, "
              f"`tablegraph serve --data-dir` (embedded store on disk)\n")
        print("| minute | req/s | p50 ms | CPU µs/req | RSS MB | errors |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['minute']} | {r['rps']:.0f} | {r['p50_ms']:.1f} | {r['cpu_us']:.0f} | "
                  f"{r['rss_mb']:.0f} | {r['errors']} |")
        first, last = rows[0]["rps"], rows[-1]["rps"]
        print(f"\nlast minute / first minute: {last / first:.2f}")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
