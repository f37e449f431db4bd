#!/usr/bin/env python3
"""The benchmark driver that bench/run.sh runs after building: starts B0, B1, B2 and tablegraph,
seeds tablegraph (and B2's copy of the same data set), measures every workload with wrk (interleaved repetitions), the cold start
with hyperfine and the latency under a simulated store round trip, and writes BENCHMARKS.md.
Standard library only. See bench/README.md for the workloads and the settings (BENCH_* variables).
"""

import contextlib
import datetime
import glob
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed as seeding  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
TABLEGRAPH = os.path.join(ROOT, "target", "release", "tablegraph")
B0 = os.path.join(BENCH, "baselines", "target", "release", "b0")
B1 = os.path.join(BENCH, "baselines", "target", "release", "b1")
B2 = os.path.join(BENCH, "baselines", "target", "release", "b2")
CLK_TCK = os.sysconf("SC_CLK_TCK")

# ---------------------------------------------------------------------------------------------
# Settings


def env(name, default):
    value = os.environ.get(name, "").strip()
    return value if value else default


def seconds(duration):
    """wrk's duration syntax: 10, 10s, 2m, 1h."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", duration)
    if not match:
        sys.exit(f"bad duration {duration!r} (expected e.g. 10s, 2m)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


DEFAULT_DURATION = "10s"
DURATION = env("BENCH_DURATION", DEFAULT_DURATION)
REPS = int(env("BENCH_REPS", "3"))
CONNECTIONS = [int(c) for c in env("BENCH_CONNECTIONS", "1 32").replace(",", " ").split()]
THREADS = int(env("BENCH_THREADS", "2"))
CHECK_DURATION = env("BENCH_CHECK_DURATION", DURATION if seconds(DURATION) < 3 else "3s")
WARMUP = env("BENCH_WARMUP", "2s")
COLD_RUNS = int(env("BENCH_COLD_RUNS", "20"))
LATENCY_MS = int(env("BENCH_LATENCY_MS", "5"))
# Peak memory is also measured on W3@200 at this many connections (one run per repetition).
RSS_CONNECTIONS = int(env("BENCH_RSS_CONNECTIONS", "64"))
PORT_BASE = int(env("BENCH_PORT_BASE", "18080"))
OUT = env("BENCH_OUT", os.path.join(ROOT, "BENCHMARKS.md"))
PHASES = set(env("BENCH_PHASES", "throughput latency cold instructions").replace(",", " ").split())
# Requests counted per workload in the instructions phase (after a few to warm up).
INSTRUCTION_REQUESTS = {"W0": 200, "W1": 200, "W2": 40}
COMMAND = env("BENCH_COMMAND", "bash bench/run.sh")
SHORT = seconds(DURATION) < seconds(DEFAULT_DURATION) or REPS < 3
NOTE = env("BENCH_NOTE", "")

W3_SIZES = [1, 10, 50, 100, 200]
LATENCY_W3_SIZES = [1, 10, 50, 100]

# ---------------------------------------------------------------------------------------------
# Processes

RUN_DIR = None
LIVE = []  # servers to stop on the way out


def log(message):
    print(message, flush=True)


class Server:
    def __init__(self, name, argv, port):
        self.name = name
        self.argv = argv
        self.port = port
        self.url = f"http://127.0.0.1:{port}/graphql"
        self.proc = None
        self.client = seeding.Client(self.url)

    def start(self):
        port_free(self.port)
        logfile = open(os.path.join(RUN_DIR, "logs", f"{self.name}.log"), "ab")
        self.proc = subprocess.Popen(
            self.argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
            # Out of the terminal's process group: a Ctrl-C reaches run.sh, which stops the
            # driver, which stops the servers in order (run.sh's trap kills any left over).
            start_new_session=True,
        )
        logfile.close()
        LIVE.append(self)
        with open(os.path.join(RUN_DIR, "pids"), "a") as pids:
            pids.write(f"{self.proc.pid} {self.argv[0]}\n")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); see {logfile.name}")
            try:
                status, _ = self.client.post("{ __typename }")
                if status == 200:
                    self.record_exe()
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"{self.name} did not answer within 120 s")

    def record_exe(self):
        """Lists the running program too when it is not argv[0] (valgrind runs its tool in the
        same process), so that run.sh's clean-up recognises it."""
        try:
            exe = os.readlink(f"/proc/{self.pid}/exe")
        except OSError:
            return
        if exe != self.argv[0]:
            with open(os.path.join(RUN_DIR, "pids"), "a") as pids:
                pids.write(f"{self.pid} {exe}\n")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in LIVE:
            LIVE.remove(self)

    @property
    def pid(self):
        return self.proc.pid

    def cpu_ticks(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)

    def store_cpu_ticks(self):
        """utime + stime of the embedded store's threads (named "embedded-store"); 0 for B0/B1."""
        ticks = 0
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return 0
        for task in tasks:
            try:
                with open(f"/proc/{self.pid}/task/{task}/stat") as f:
                    head, tail = f.read().rsplit(")", 1)
            except OSError:
                continue  # the thread ended
            if head.split("(", 1)[1].startswith("embedded-store"):
                fields = tail.split()
                ticks += int(fields[11]) + int(fields[12])
        return ticks

    def reset_peak_rss(self):
        """Resets VmHWM to the current RSS (Linux >= 4.0); False when not allowed."""
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def status_kb(self, key):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0


def port_free(port):
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            raise RuntimeError(f"port {port} is in use; set BENCH_PORT_BASE to another base")


def stop_all():
    for server in list(LIVE):
        try:
            server.stop()
        except Exception as e:  # noqa: BLE001 - best effort on the way out
            log(f"could not stop {server.name}: {e}")


def tablegraph(name, port, *extra, cache=False):
    """`serve --memory`; with the read cache at its default when `cache`, off otherwise (the rows
    named tablegraph are the store's reads, as before the cache)."""
    off = [] if cache else ["--cache-bytes", "0"]
    return Server(name, [TABLEGRAPH, "serve", "--memory", "--listen", f"127.0.0.1:{port}", *off,
                         *extra], port)


CACHED = "tablegraph-cached"


def warm_probe(server, request_body, validate, what):
    """The storage calls and cache hits of one request once the same request warmed the cache:
    after seeding, the server's reader of the change stream is behind the seed's records for a
    moment (reads bypass the cache, and each record it reads evicts its key), so the request is
    repeated until it makes no storage call, for 10 s at most."""
    deadline = time.monotonic() + 10
    while True:
        answer = answered(server, request_body, validate, what, {"x-tablegraph-storage-calls": "1"})
        extensions = answer.get("extensions") or {}
        seen = {"calls": extensions.get("storageCalls", []), "hits": extensions.get("cacheHits", [])}
        if not seen["calls"] or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


def mixed_exactness(server, ids, duration, readers=4, goals=5):
    """W2 pages read beside renames of the page's first goals (one writer, one rename at a time),
    on the cached server: each page must show, for each renamed goal, a title at least as new as
    the last rename acknowledged before the page was asked for, and no newer than the last sent
    when it was answered. Answers the pages checked and the titles that broke that."""
    import threading
    page_query = ("query($team: ID!) { team(id: $team) { goals(first: 50) { "
                  "edges { node { id title leads { name } teams { name } } } } } }")
    _, first = server.client.post(page_query, {"team": ids["team"]})
    watched = [e["node"]["id"] for e in first["data"]["team"]["goals"]["edges"][:goals]]
    lock = threading.Lock()
    acked = {g: -1 for g in watched}
    sent = {g: -1 for g in watched}
    stop = time.monotonic() + duration
    tally = {"pages": 0, "wrong": 0, "writes": 0, "examples": []}

    def write():
        n = 0
        while time.monotonic() < stop:
            goal = watched[n % len(watched)]
            with lock:
                sent[goal] = n
            status, answer = server.client.post(
                "mutation($id: ID!, $t: String!) { updateGoal(input: { id: $id, title: $t }) { id } }",
                {"id": goal, "t": f"Mixed {n}"})
            if status != 200 or answer.get("errors"):
                raise RuntimeError(f"mixed write: {answer}")
            with lock:
                acked[goal] = n
                tally["writes"] += 1
            n += 1

    def read():
        while time.monotonic() < stop:
            with lock:
                floor = dict(acked)
            status, answer = server.client.post(page_query, {"team": ids["team"]})
            with lock:
                ceiling = dict(sent)
            if status != 200 or answer.get("errors"):
                raise RuntimeError(f"mixed read: {answer}")
            titles = {e["node"]["id"]: e["node"]["title"]
                      for e in answer["data"]["team"]["goals"]["edges"]}
            with lock:
                tally["pages"] += 1
                for goal in watched:
                    title = titles.get(goal, "")
                    n = int(title.split()[1]) if title.startswith("Mixed ") else -1
                    if not floor[goal] <= n <= ceiling[goal]:
                        tally["wrong"] += 1
                        if len(tally["examples"]) < 5:
                            tally["examples"].append(f"{goal}: {title!r} not in {floor[goal]}..{ceiling[goal]}")

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tally


def cache_metrics(server):
    """The cache's figures from /metrics: p99 of the eviction delay (from the histogram's buckets),
    bytes, hits and misses."""
    import urllib.request
    text = urllib.request.urlopen(server.url.replace("/graphql", "/metrics"), timeout=10).read().decode()
    buckets, figures = [], {}
    for line in text.splitlines():
        m = re.match(r'tablegraph_cache_eviction_delay_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
        if m:
            buckets.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)), float(m.group(2))))
        m = re.match(r'(tablegraph_cache_[a-z_]+)(\{[^}]*\})? (\S+)$', line)
        if m:
            figures[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    total = buckets[-1][1] if buckets else 0
    p99 = next((le for le, count in buckets if total and count >= 0.99 * total), None)
    figures["eviction_p99_le_s"] = p99
    figures["eviction_records"] = total
    return figures


# ---------------------------------------------------------------------------------------------
# Workloads

KOAN_EDGES = "edges { role node { title leads { name } teams { name } } }"


def body(query, variables=None):
    doc = {"query": query}
    if variables:
        doc["variables"] = variables
    return json.dumps(doc, separators=(",", ":"))


def koan(ids, first):
    if first <= 100:
        return body(
            f"query($team: ID!, $first: Int) {{ team(id: $team) {{ goals(first: $first) {{ {KOAN_EDGES} }} }} }}",
            {"team": ids["team"], "first": first},
        )
    # 200 goals: the first two pages of 100 in one request, as two aliased connections.
    return body(
        "query($team: ID!, $after: String) { team(id: $team) { "
        f"page1: goals(first: 100) {{ {KOAN_EDGES} }} "
        f"page2: goals(first: 100, after: $after) {{ {KOAN_EDGES} }} }} }}",
        {"team": ids["team"], "after": ids["after100"]},
    )


W0_TG = body("{ __typename }")
W0_B1 = body("{ hello }")
W4_TEMPLATE = ('{"query":"mutation($input: CreateFarmInput!) { createFarm(input: $input) '
               '{ id name version createdAt } }","variables":{"input":{"name":"W4 %s %d-%d"}}}')


def read_bodies(ids):
    """The read workloads against tablegraph: name -> (body, validator)."""
    bodies = {
        "W0": (W0_TG, lambda d: d.get("__typename") == "Query"),
        "W1": (body("query($id: ID!) { node(id: $id) { id ... on Farm { name } } }",
                    {"id": ids["farm"]}),
               lambda d: (d.get("node") or {}).get("name") == "Bench Farm"),
        "W2": (koan(ids, 50), koan_validator(50)),
    }
    for n in W3_SIZES:
        bodies[f"W3@{n}"] = (koan(ids, n), koan_validator(n))
    bodies["W5"] = (W5, w5_valid)
    return bodies


# A list page of 50 with a filter that matches half of the goals (seed.py alternates kinds).
W5 = body('{ listGoals(first: 50, filter: { kind: { eq: "KEY_RESULT" } }) '
          '{ edges { node { id title kind } } pageInfo { hasNextPage } } }')


def w5_valid(data):
    edges = (data.get("listGoals") or {}).get("edges") or []
    return (len(edges) == 50 and all(e["node"]["kind"] == "KEY_RESULT" for e in edges)
            and data["listGoals"]["pageInfo"]["hasNextPage"])


def koan_validator(n):
    def valid(data):
        team = data.get("team") or {}
        pages = [team[k] for k in ("goals", "page1", "page2") if k in team]
        edges = [e for p in pages for e in p["edges"]]
        titles = {e["node"]["title"] for e in edges}
        return (len(edges) == n and len(titles) == n
                and all(e["role"] == "TEAM" and len(e["node"]["leads"]) == 1
                        and len(e["node"]["teams"]) == 2 for e in edges))
    return valid


def describe_calls(calls):
    parts = []
    for c in calls:
        op = c.get("operation", "?") + (f":{c['index']}" if c.get("index") else "")
        extra = []
        if c.get("keys") is not None:
            extra.append(f"{c['keys']} key{'s' if c['keys'] != 1 else ''}")
        if c.get("items") is not None:
            extra.append(f"{c['items']} item{'s' if c['items'] != 1 else ''}")
        parts.append(op + (f" ({', '.join(extra)})" if extra else ""))
    return ", ".join(parts) if parts else "none"


def answered(server, request_body, validate, what, headers=None):
    """One request on the server's keep-alive client; its answer, checked: HTTP 200, no
    errors, and `validate` holds of its data."""
    doc = json.loads(request_body)
    status, answer = server.client.post(doc["query"], doc.get("variables"), headers)
    if status != 200 or not answer or answer.get("errors") or not validate(answer.get("data") or {}):
        raise RuntimeError(f"{what} on {server.name}: unexpected answer HTTP {status}: "
                           f"{json.dumps(answer)[:600]}")
    return answer


def probe(server, request_body, validate, what):
    """One request with the storage-calls header: checks the answer, returns its calls."""
    answer = answered(server, request_body, validate, what, {"x-tablegraph-storage-calls": "1"})
    return (answer.get("extensions") or {}).get("storageCalls", [])


# ---------------------------------------------------------------------------------------------
# wrk

LUA_DONE = r"""
threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%.0f,"duration_us":%.0f,"bytes":%.0f,' ..
    '"err_connect":%.0f,"err_read":%.0f,"err_write":%.0f,"err_status":%.0f,"err_timeout":%.0f,' ..
    '"p50_us":%.0f,"p90_us":%.0f,"p99_us":%.0f,"mean_us":%.1f,"max_us":%.0f',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
  if CHECK then
    local total, errors, expected, other, lo, hi = 0, 0, 0, 0, 1e9, -1
    for _, t in ipairs(threads) do
      total = total + t:get("n_total")
      errors = errors + t:get("n_errors")
      expected = expected + t:get("n_expected")
      other = other + t:get("n_other")
      lo = math.min(lo, t:get("min_calls"))
      hi = math.max(hi, t:get("max_calls"))
    end
    io.write(string.format(',"check_total":%.0f,"check_errors":%.0f,"check_expected":%.0f,' ..
      '"check_other":%.0f,"check_min_calls":%.0f,"check_max_calls":%.0f',
      total, errors, expected, other, lo, hi))
  end
  io.write("}\n")
end
"""

LUA_CHECK = r"""
CHECK = true
wrk.headers["x-tablegraph-storage-calls"] = "1"
n_total, n_errors, n_expected, n_other, min_calls, max_calls = 0, 0, 0, 0, 1e9, -1
function response(status, headers, body)
  n_total = n_total + 1
  if status ~= 200 or string.find(body, '"errors"', 1, true) then n_errors = n_errors + 1 end
  local _, calls = string.gsub(body, '"operation"', '')
  if calls == EXPECTED_CALLS then n_expected = n_expected + 1 else n_other = n_other + 1 end
  if calls < min_calls then min_calls = calls end
  if calls > max_calls then max_calls = calls end
end
"""


def lua_long(text):
    assert "]==]" not in text
    return f"[==[{text}]==]"


def write_lua(name, static_body=None, template=None, expected_calls=None):
    lines = ['wrk.method = "POST"', 'wrk.headers["Content-Type"] = "application/json"', "CHECK = false",
             "tid = 0"]
    if static_body is not None:
        lines.append(f"wrk.body = {lua_long(static_body)}")
    if template is not None:
        lines += [
            f"local template = {lua_long(template)}",
            'local prefix = os.getenv("BENCH_W4_PREFIX") or tostring(os.time())',
            "local counter = 0",
            "function request()",
            "  counter = counter + 1",
            "  return wrk.format(nil, nil, nil, string.format(template, prefix, tid, counter))",
            "end",
        ]
    if expected_calls is not None:
        lines.append(f"EXPECTED_CALLS = {int(expected_calls)}")
        lines.append(LUA_CHECK)
    lines.append(LUA_DONE)
    path = os.path.join(RUN_DIR, "lua", f"{name}.lua")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


RUN_COUNTER = [0]


def run_wrk(server, script, conns, duration, tag, measure=True):
    threads = max(1, min(THREADS, conns))
    RUN_COUNTER[0] += 1
    prefix = f"{os.getpid()}-{RUN_COUNTER[0]}"
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}", "--latency", "--timeout", "10s",
           "-s", script, server.url]
    reset = server.reset_peak_rss()
    ticks = server.cpu_ticks()
    store_ticks = server.store_cpu_ticks()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, "BENCH_W4_PREFIX": prefix})
    ticks = server.cpu_ticks() - ticks
    store_ticks = server.store_cpu_ticks() - store_ticks
    hwm_kb = server.status_kb("VmHWM")
    with open(os.path.join(RUN_DIR, "wrk", f"{RUN_COUNTER[0]:03}-{tag}.txt"), "w") as f:
        f.write(" ".join(shlex.quote(c) for c in cmd) + "\n\n" + done.stdout + done.stderr)
    line = next((l for l in done.stdout.splitlines() if l.startswith("BENCHJSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({tag}): {done.stderr.strip() or done.stdout[-500:]}")
    r = json.loads(line[len("BENCHJSON "):])
    requests = max(r["requests"], 1)
    r.update({
        "tag": tag,
        "server": server.name,
        "conns": conns,
        "threads": threads,
        "rps": r["requests"] / (r["duration_us"] / 1e6),
        "p50_ms": r["p50_us"] / 1000,
        "p99_ms": r["p99_us"] / 1000,
        "cpu_us": ticks / CLK_TCK * 1e6 / requests,
        "store_cpu_us": store_ticks / CLK_TCK * 1e6 / requests,
        "rss_mb": hwm_kb * 1024 / 1e6,
        "rss_reset": reset,
        "errors": r["err_connect"] + r["err_read"] + r["err_write"] + r["err_status"] + r["err_timeout"],
    })
    if measure:
        with open(os.path.join(RUN_DIR, "runs.jsonl"), "a") as f:
            f.write(json.dumps(r) + "\n")
    return r


# ---------------------------------------------------------------------------------------------
# Statistics and formatting


def med(values):
    return statistics.median(values) if values else float("nan")


def fmt(value, digits):
    if value != value:  # NaN
        return "–"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def spread(values, digits):
    if not values:
        return "–"
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(med(values), digits)} ({fmt(min(values), digits)}–{fmt(max(values), digits)})"


# ---------------------------------------------------------------------------------------------
# Phases


def phase_throughput(results):
    b0 = Server("b0", [B0, "--listen", f"127.0.0.1:{PORT_BASE}"], PORT_BASE).start()
    b1 = Server("b1", [B1, "--listen", f"127.0.0.1:{PORT_BASE + 1}"], PORT_BASE + 1).start()
    tg = tablegraph("tablegraph", PORT_BASE + 2).start()
    log("seeding tablegraph ...")
    ids = seeding.seed(tg.url)
    log(f"  seeded {ids['goals']} goals, {ids['users']} users, 2 teams, 1 farm in {ids['seconds']} s")
    results["seed"] = ids
    b2 = start_b2(results)
    tgc = tablegraph(CACHED, PORT_BASE + 7, cache=True).start()
    log("seeding tablegraph with the read cache on ...")
    ids_cached = seeding.seed(tgc.url)
    results["seed_cached"] = ids_cached

    # The answers and storage calls of one request each, before any load.
    reads = read_bodies(ids)
    calls = {}
    probe(b0, W0_TG, lambda d: d.get("__typename") == "Query", "W0")
    probe(b1, W0_B1, lambda d: d.get("hello") == "world", "W0")
    for name, (request_body, valid) in reads.items():
        calls[name] = probe(tg, request_body, valid, name)
    scripts = {("W0", "b0"): write_lua("W0-b0", W0_TG), ("W0", "b1"): write_lua("W0-b1", W0_B1)}
    checks = {}
    for name, (request_body, valid) in read_bodies(results["seed_b2"]).items():
        if name in B2_WORKLOADS:
            probe(b2, request_body, valid, name)
            scripts[(name, "b2")] = write_lua(f"{name}-b2", request_body)
    cached_calls = {}
    for name, (request_body, valid) in read_bodies(ids_cached).items():
        if name in B2_WORKLOADS:
            cached_calls[name] = warm_probe(tgc, request_body, valid, name)
            scripts[(name, CACHED)] = write_lua(f"{name}-cached", request_body)
            # Reads counted as calls and cache hits together.
            checks[(name, CACHED)] = write_lua(f"{name}-cached-check", request_body,
                                               expected_calls=len(calls[name]))
    results["cached_calls"] = cached_calls
    for name, (request_body, _) in reads.items():
        scripts[(name, "tablegraph")] = write_lua(f"{name}-tablegraph", request_body)
        checks[name] = write_lua(f"{name}-check", request_body, expected_calls=len(calls[name]))
    scripts[("W4", "tablegraph")] = write_lua("W4-tablegraph", template=W4_TEMPLATE)

    # W4 runs on a fresh, empty tablegraph each time, so that the read workloads always see
    # the same data set and each W4 run starts from the same (empty) table.
    def fresh_w4():
        return tablegraph("tablegraph-w4", PORT_BASE + 4).start()

    w4 = fresh_w4()
    calls["W4"] = probe(w4, W4_TEMPLATE.replace("%s %d-%d", "probe"),
                        lambda d: bool((d.get("createFarm") or {}).get("id")), "W4")
    checks["W4"] = write_lua("W4-check", template=W4_TEMPLATE, expected_calls=len(calls["W4"]))
    w4.stop()
    results["calls"] = calls

    # Every response checked, under load: storage calls per request and GraphQL errors.
    log(f"checking storage calls under load ({CHECK_DURATION} per check) ...")
    check_results = []
    top = max(CONNECTIONS)
    plan = [("W2", c) for c in CONNECTIONS] + [(n, top) for n in reads if n not in ("W2",)]
    plan.append(("W4", top))
    plan += [((name, CACHED), c) for name in B2_WORKLOADS for c in CONNECTIONS]
    for key, conns in plan:
        name, on = key if isinstance(key, tuple) else (key, None)
        server = fresh_w4() if name == "W4" else tgc if on else tg
        r = run_wrk(server, checks[key], conns, CHECK_DURATION, f"check-{name}{'-cached' if on else ''}-c{conns}",
                    measure=False)
        if name == "W4":
            server.stop()
        r.update({"workload": name, "expected_calls": len(calls[name]), "server": server.name})
        check_results.append(r)
        log(f"  {name:7} c={conns:<3} {r['check_expected']}/{r['check_total']} responses with exactly "
            f"{len(calls[name])} storage calls (min {r['check_min_calls']}, max {r['check_max_calls']}), "
            f"{r['check_errors']} with errors")
    results["checks"] = check_results

    log(f"warming up ({WARMUP} each) ...")
    for server, script in ((b0, scripts[("W0", "b0")]), (b1, scripts[("W0", "b1")]),
                           (tg, scripts[("W0", "tablegraph")]), (tg, scripts[("W2", "tablegraph")]),
                           (b2, scripts[("W2", "b2")]), (tgc, scripts[("W2", CACHED)])):
        run_wrk(server, script, top, WARMUP, f"warmup-{server.name}", measure=False)

    order = ["W0", "W1", "W2"] + [f"W3@{n}" for n in W3_SIZES] + ["W4", "W5"]
    cells = []
    for rep in range(1, REPS + 1):
        for conns in CONNECTIONS:
            for name in order:
                for server_name in servers_of(name):
                    cells.append((rep, conns, name, server_name))
        # Peak memory with many clients on the largest page (RSS_CONNECTIONS; one run per rep).
        if RSS_CONNECTIONS not in CONNECTIONS:
            cells.append((rep, RSS_CONNECTIONS, "W3@200", "tablegraph"))
    log(f"measuring: {len(cells)} runs of {DURATION} ...")
    runs = []
    servers = {"b0": b0, "b1": b1, "b2": b2, "tablegraph": tg, CACHED: tgc}
    for i, (rep, conns, name, server_name) in enumerate(cells, 1):
        server = fresh_w4() if name == "W4" else servers[server_name]
        r = run_wrk(server, scripts[(name, server_name)], conns, DURATION,
                    f"{name}-{server_name}-c{conns}-rep{rep}")
        if name == "W4":
            server.stop()
        # W4's instance is another tablegraph process; the tables file it under tablegraph.
        r.update({"workload": name, "rep": rep, "instance": server.name, "server": server_name})
        runs.append(r)
        log(f"  [{i}/{len(cells)}] rep {rep} {name:7} {server_name:10} c={conns:<3} "
            f"{r['rps']:>10,.0f} req/s  p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms  "
            f"cpu {r['cpu_us']:.0f} µs/req  rss {r['rss_mb']:.1f} MB"
            + (f"  ERRORS {r['errors']}" if r["errors"] else ""))
    results["runs"] = runs
    log(f"W2 pages beside renames of their goals on the cached server ({DURATION}) ...")
    results["mixed"] = mixed_exactness(tgc, ids_cached, seconds(DURATION))
    results["cache_metrics"] = cache_metrics(tgc)
    log(f"  {results['mixed']['pages']:,} pages, {results['mixed']['writes']:,} renames, "
        f"{results['mixed']['wrong']} titles out of place; {results['cache_metrics']}")
    for server in (b0, b1, b2, tg, tgc):
        server.stop()


# B2 serves these workloads (bench/baselines/src/bin/b2.rs), interleaved with tablegraph's.
B2_WORKLOADS = ("W1", "W2")


def servers_of(workload):
    if workload == "W0":
        return ["b0", "b1", "tablegraph"]
    return ["tablegraph", CACHED, "b2"] if workload in B2_WORKLOADS else ["tablegraph"]


def b2_snapshot(results):
    """B2 reads a copy of the same data set: a tablegraph on a data directory is seeded and
    stopped, and B2 loads its SQLite file into its own in-memory embedded store."""
    data_dir = os.path.join(RUN_DIR, "b2-data")
    snapshot = os.path.join(data_dir, "tablegraph.db")
    if "seed_b2" in results and os.path.exists(snapshot):
        return snapshot
    seeder = Server("tablegraph-b2-data", [TABLEGRAPH, "serve", "--data-dir", data_dir, "--listen",
                                           f"127.0.0.1:{PORT_BASE + 6}"], PORT_BASE + 6).start()
    log("seeding B2's copy of the data set ...")
    results["seed_b2"] = seeding.seed(seeder.url)
    seeder.stop()
    # B2 loads the copy into SQLite's memdb, which has no write-ahead log: the copy says so.
    with contextlib.closing(sqlite3.connect(snapshot)) as copy:
        copy.execute("PRAGMA journal_mode=DELETE")
    return snapshot


def start_b2(results):
    snapshot = b2_snapshot(results)
    return Server("b2", [B2, "--listen", f"127.0.0.1:{PORT_BASE + 6}", "--snapshot", snapshot],
                  PORT_BASE + 6).start()


def phase_latency(results):
    port = PORT_BASE + 3
    tg = tablegraph("tablegraph-latency", port, "--simulated-latency-ms", str(LATENCY_MS)).start()
    log(f"seeding tablegraph with a simulated {LATENCY_MS} ms storage round trip ...")
    ids = seeding.seed(tg.url)
    log(f"  seeded in {ids['seconds']} s")
    reads = read_bodies(ids)
    names = ["W2"] + [f"W3@{n}" for n in LATENCY_W3_SIZES]
    calls, scripts = {}, {}
    for name in names:
        request_body, valid = reads[name]
        calls[name] = probe(tg, request_body, valid, name)
        scripts[name] = write_lua(f"{name}-latency", request_body)
    results["latency_calls"] = calls
    runs = []
    cells = [(rep, name) for rep in range(1, REPS + 1) for name in names]
    log(f"measuring at 1 connection: {len(cells)} runs of {DURATION} ...")
    for i, (rep, name) in enumerate(cells, 1):
        r = run_wrk(tg, scripts[name], 1, DURATION, f"latency-{name}-rep{rep}")
        r.update({"workload": name, "rep": rep})
        runs.append(r)
        log(f"  [{i}/{len(cells)}] rep {rep} {name:7} p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
            f"  {r['rps']:,.0f} req/s" + (f"  ERRORS {r['errors']}" if r["errors"] else ""))
    tg.stop()
    cached = tablegraph("tablegraph-latency-cached", port, "--simulated-latency-ms", str(LATENCY_MS),
                        cache=True).start()
    log("seeding tablegraph with the read cache on and the simulated round trip ...")
    ids = seeding.seed(cached.url)
    request_body, valid = read_bodies(ids)["W2"]
    results["latency_cached_calls"] = warm_probe(cached, request_body, valid, "W2")
    script = write_lua("W2-latency-cached", request_body)
    for rep in range(1, REPS + 1):
        r = run_wrk(cached, script, 1, DURATION, f"latency-W2-cached-rep{rep}")
        r.update({"workload": "W2", "rep": rep})
        runs.append(r)
        log(f"  rep {rep} W2 (cache on, warm) p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms")
    results["latency_runs"] = runs
    cached.stop()


def phase_cold(results):
    port = PORT_BASE + 5
    port_free(port)
    export = os.path.join(RUN_DIR, "hyperfine-cold-start.json")
    command = f"bash {shlex.quote(os.path.join(BENCH, 'cold_start.sh'))} {shlex.quote(TABLEGRAPH)} {port}"
    cmd = ["hyperfine", "-N", "--warmup", "2", "--runs", str(COLD_RUNS), "--style", "basic",
           "--export-json", export, command]
    log(f"cold start: hyperfine, {COLD_RUNS} runs ...")
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    with open(os.path.join(RUN_DIR, "hyperfine-cold-start.txt"), "w") as f:
        f.write(" ".join(shlex.quote(c) for c in cmd) + "\n\n" + done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"hyperfine failed: {done.stderr.strip()[-800:]}")
    with open(export) as f:
        r = json.load(f)["results"][0]
    results["cold"] = {"median_ms": r["median"] * 1000, "mean_ms": r["mean"] * 1000,
                       "min_ms": r["min"] * 1000, "max_ms": r["max"] * 1000,
                       "runs": len(r["times"]), "command": command}
    log(f"  median {r['median'] * 1000:.1f} ms (min {r['min'] * 1000:.1f}, max {r['max'] * 1000:.1f})")


def callgrind(name, argv, port):
    """`argv` run under callgrind (valgrind), which counts every instruction the process runs,
    in all of its threads; valgrind runs them one at a time."""
    out = os.path.join(RUN_DIR, "callgrind", f"{name}.%p")
    return Server(name, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv], port)


def instructions(server, request_body, valid, n, parts=True):
    """The instructions `server` ran for `n` requests of `request_body` sent one after another
    on the server's keep-alive connection, divided by `n`: callgrind's counters are zeroed
    before the first and dumped after the last. Every answer must pass `valid`. With `parts`,
    also their split at the SDK (`instruction_parts`), else None."""
    def control(flag):
        # callgrind_control reaches an idle process through vgdb (ptrace); where that is not
        # allowed it would wait for ever.
        subprocess.run(["callgrind_control", flag, str(server.pid)], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    sent = itertools.count()

    def send(count):
        for _ in range(count):
            # A write (W4) makes each request's body anew: its names must differ.
            made = request_body(next(sent)) if callable(request_body) else request_body
            answered(server, made, valid, "instructions")

    send(5)
    control("-z")
    send(n)
    control("-d")
    dumps = glob.glob(os.path.join(RUN_DIR, "callgrind", f"{server.name}.{server.pid}.*"))
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump for {server.name}")
    newest = max(dumps, key=lambda path: int(path.rsplit(".", 1)[1]))
    with open(newest) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1]) / n, instruction_parts(newest, n) if parts else None
    raise RuntimeError(f"no summary in {newest}")


# The parts of a request's instructions, from the inclusive cost of the functions that begin
# them (`callgrind_annotate --inclusive=yes`). The embedded store's operations run on its own
# threads, outside the SDK's call. The SDK's call is its orchestrator's (which holds its
# signing and its parsing of answers) and, beside it, the configuration applied to each call.
PARTS = (
    ("store", re.compile(r":(tablegraph::store|b2)::in_process::run \[")),
    ("sdk", re.compile(r":aws_smithy_runtime::client::orchestrator::invoke_with_stop_point\b")),
    ("config", re.compile(r":aws_smithy_runtime::client::orchestrator::apply_configuration \[")),
    ("sign", re.compile(r"as aws_smithy_runtime_api::client::auth::Sign>::sign_http_request \[")),
    ("parse", re.compile(r"as aws_smithy_runtime_api::client::ser_de::DeserializeResponse>"
                         r"::deserialize_nonstreaming \[")),
)


def instruction_parts(dump, n):
    """Instructions per request of each of PARTS in the callgrind dump `dump` of `n` requests:
    "sdk" is the outermost of the orchestrator's frames that keep a name (so the largest), the
    others are summed over every function that matches, and "sdk" then includes "config". None
    if callgrind_annotate cannot read the dump, or finds no store or SDK in it (W0, or a build
    whose names differ)."""
    try:
        out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                             check=True, capture_output=True, text=True, timeout=300).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    parts = {name: 0 for name, _ in PARTS}
    for line in out.splitlines():
        head = line.strip().split(" ", 1)[0].replace(",", "")
        if not head.isdigit() or "drop_in_place" in line:
            continue
        for name, pattern in PARTS:
            if pattern.search(line):
                cost = int(head)
                parts[name] = max(parts[name], cost) if name == "sdk" else parts[name] + cost
    if not (parts["store"] and parts["sdk"]):
        return None
    parts["sdk"] += parts["config"]
    return {name: value / n for name, value in parts.items()}


def phase_instructions(results):
    """Optional: a failure here is logged and the report written without it."""
    if not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        log("instructions: valgrind is not installed here; skipped (apt-get install valgrind)")
        return
    try:
        count_instructions(results)
    except (OSError, RuntimeError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as e:
        log(f"instructions: not counted ({e})")
    finally:
        stop_all()


def count_tablegraph(name, binary, port, requests, parts=True):
    """Workload -> (instructions per request, their parts or None) for each workload of
    `requests` (workload -> requests counted), on `binary` serving a fresh `serve --memory` under
    callgrind, seeded. A build with the read cache serves with it off (`--cache-bytes 0`), so the
    count is the store's reads, as for the rows named tablegraph and for builds before it."""
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    off = ["--cache-bytes", "0"] if "--cache-bytes" in help_text else []
    server = callgrind(name, [binary, "serve", "--memory", "--listen", f"127.0.0.1:{port}", *off],
                       port).start()
    reads = {**read_bodies(seeding.seed(server.url)),
             "W4": (lambda n: W4_TEMPLATE % ("instructions", 0, n),
                    lambda d: bool((d.get("createFarm") or {}).get("id")))}
    counted = {workload: instructions(server, *reads[workload], n, parts)
               for workload, n in requests.items()}
    server.stop()
    return counted


def count_instructions(results):
    os.makedirs(os.path.join(RUN_DIR, "callgrind"), exist_ok=True)
    port = PORT_BASE + 7
    counted = {}
    log("instructions per request under callgrind (about 4 min) ...")
    for name, value in count_tablegraph("tablegraph-callgrind", TABLEGRAPH, port,
                                        INSTRUCTION_REQUESTS).items():
        counted[("tablegraph", name)] = value
    b1 = callgrind("b1-callgrind", [B1, "--listen", f"127.0.0.1:{port}"], port).start()
    counted[("b1", "W0")] = instructions(b1, W0_B1, lambda d: d.get("hello") == "world",
                                         INSTRUCTION_REQUESTS["W0"])
    b1.stop()
    snapshot = b2_snapshot(results)
    b2 = callgrind("b2-callgrind", [B2, "--listen", f"127.0.0.1:{port}", "--snapshot", snapshot],
                   port).start()
    b2_reads = read_bodies(results["seed_b2"])
    for name in B2_WORKLOADS:
        counted[("b2", name)] = instructions(b2, *b2_reads[name], INSTRUCTION_REQUESTS[name])
    b2.stop()
    results["instructions"] = [{"server": server, "workload": name, "per_request": value,
                                "parts": parts, "requests": INSTRUCTION_REQUESTS[name]}
                               for (server, name), (value, parts) in counted.items()]
    for (server, name), (value, _) in counted.items():
        log(f"  {server:10} {name}: {value:,.0f} instructions per request")


# ---------------------------------------------------------------------------------------------
# The report


def below_the_sdk(counted, workload, tablegraph_runs):
    """tablegraph's instructions per `workload` in the embedded store and the SDK, and what
    they come to at the workload's CPU time per instruction at each connection count
    (`tablegraph_runs(workload, conns)` gives its runs); None without both."""
    mine = counted.get(("tablegraph", workload))
    if not (mine and mine.get("parts")):
        return None
    below = mine["parts"]["store"] + mine["parts"]["sdk"]
    estimates = {}
    for conns in CONNECTIONS:
        rs = tablegraph_runs(workload, conns)
        if rs:
            estimates[conns] = below * med([r["cpu_us"] for r in rs]) / mine["per_request"]
    return (below, estimates) if estimates else None


def report_parts(w, counted, tablegraph_runs):
    """The table "Where the instructions go": W1 and W2 on tablegraph and B2, split at the SDK."""
    columns = [(server, name) for name in B2_WORKLOADS for server in ("tablegraph", "b2")
               if counted.get((server, name), {}).get("parts")]
    if not columns:
        return

    def row(label, value):
        cells = []
        for key in columns:
            r = counted[key]
            part = value(r["parts"], r["per_request"])
            cells.append(f"{part / 1e6:.2f} M ({100 * part / r['per_request']:.0f} %)")
        w(f"| {label} | " + " | ".join(cells) + " |")

    w("### Where the instructions go")
    w("")
    w("| per request | " + " | ".join(f"{name} {'B2' if server == 'b2' else server}"
                                     for server, name in columns) + " |")
    w("|---|" + "---|" * len(columns))
    row("the embedded store: dynoxide, SQLite, reading and writing its JSON (`in_process::run`)",
        lambda p, _: p["store"])
    row("the SDK: parsing the answers", lambda p, _: p["parse"])
    row("the SDK: signing the requests", lambda p, _: p["sign"])
    row("the SDK: the rest of its calls (serializing, interceptors, endpoint, the configuration of each call)",
        lambda p, _: p["sdk"] - p["parse"] - p["sign"])
    row("above the SDK: HTTP, GraphQL, the server's own code", lambda p, t: t - p["store"] - p["sdk"])
    row("all", lambda _, t: t)
    w("")
    said = []
    for name, limit in (("W2", 1000), ("W1", 100)):
        below = below_the_sdk(counted, name, tablegraph_runs)
        if not below:
            continue
        instructions, estimates = below
        low = min(estimates.values())
        text = (f"{name}'s store and SDK parts, {instructions / 1e6:.2f} M instructions, come to "
                + " and ".join(f"≈ {e:,.0f} µs at its CPU time per instruction at {conns} "
                               f"connection{'s' if conns > 1 else ''}" for conns, e in estimates.items()))
        if low > limit:
            text += (f", more than the {limit:,} µs the target allows for the whole request: no "
                     "work above the SDK meets it through this store and the SDK on this machine")
        else:
            text += f", which leaves {limit - low:,.0f} µs of the {limit:,} µs target for the rest"
        said.append(text)
    w("From the same counts: callgrind_annotate's inclusive cost of the functions that begin "
      "each part (the embedded store's operations run on its own threads, outside the SDK's "
      "calls); \"above the SDK\" is what is left, tokio and tracing included. Both servers go "
      "through the same embedded store and the same SDK. The CPU time per instruction is the "
      "workload's CPU per request divided by its instructions, so it carries the kernel's work "
      "too; the estimates are no more than that. "
      + ("; ".join(said) + ". `bench/PROFILE.md` says what is in each part." if said else ""))
    w("")


def os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def machine():
    def first(path, key):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    def out(*cmd):
        try:
            return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    commit = out("git", "rev-parse", "--short", "HEAD") or "?"
    dirty = " (with uncommitted changes)" if out("git", "status", "--porcelain", "--untracked-files=no") else ""
    return {
        "nproc": out("nproc"),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory": f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "?",
        "kernel": f"{platform.system()} {platform.release()}",
        "os": os_name(),
        "rustc": out("rustc", "--version"),
        "wrk": out("wrk", "--version").splitlines()[0] if out("wrk", "--version") else "?",
        "hyperfine": out("hyperfine", "--version"),
        "commit": commit + dirty,
    }


def verdict(ok):
    if ok is None:
        return "reported"
    return "met" if ok else "**not met**"


def report(results, started, finished):
    """Writes OUT: this run's report, then the runs kept from other machines, then PROFILE.md."""
    lines, targets = report_lines(results, started, finished)
    lines += other_machines()
    # Profiles and before/after figures are written by hand in bench/PROFILE.md.
    profile = os.path.join(ROOT, "bench", "PROFILE.md")
    if os.path.exists(profile):
        with open(profile) as f:
            lines.append(f.read().rstrip())
        lines.append("")
    with open(OUT, "w") as f:
        f.write("\n".join(lines))
    return targets


# Runs on other machines, kept as bench/machines/<name>/results.json (bench/README.md).
MACHINES = os.path.join(BENCH, "machines")


def other_machines():
    """The report of each run kept in MACHINES, with that run's settings, one heading level down;
    not the run being reported (`--report bench/machines/<name>`), which is the report itself."""
    global RUN_DIR
    lines = []
    for path in sorted(glob.glob(os.path.join(MACHINES, "*", "results.json"))):
        if os.path.realpath(os.path.dirname(path)) == os.path.realpath(RUN_DIR):
            continue
        with open(path) as f:
            other = json.load(f)
        started = datetime.datetime.fromisoformat(other["started"])
        finished = datetime.datetime.fromisoformat(other.get("finished", other["started"]))
        saved = settings(), RUN_DIR
        try:
            globals().update({"NOTE": "", **other["settings"]})
            RUN_DIR = os.path.dirname(path)
            body, _ = report_lines(other, started, finished)
        finally:
            globals().update(saved[0])
            RUN_DIR = saved[1]
        m = other["machine"]
        lines.append(f"## On another machine: {m['nproc']} cores ({m['cpu']})")
        lines += ["#" + line if line.startswith("#") else line for line in body[1:]]
    return lines


def report_lines(results, started, finished):
    """This run's report as lines, and its targets."""
    # The machine and commit as they were when the run started (older runs: as they are now).
    m = results.get("machine") or machine()
    lines = []
    w = lines.append
    w("# Benchmarks")
    w("")
    if SHORT:
        w(f"> **Smoke run, not final numbers**: {DURATION} per measurement and {REPS} repetition(s) "
          f"(the defaults are {DEFAULT_DURATION} and 3). "
          "Run `bash bench/run.sh` on a quiet machine for figures to quote.")
        w("")
    note = NOTE
    if note:
        w(f"> {note}")
        w("")
    w(f"Produced by `bench/run.sh` (see `bench/README.md`). Date: {started:%Y-%m-%d %H:%M} UTC "
      f"(took {(finished - started).total_seconds() / 60:.1f} min).")
    w("")
    w("```sh")
    w(COMMAND)
    w("```")
    w("")
    w("| machine | |")
    w("|---|---|")
    for key, label in (("nproc", "cores (`nproc`)"), ("cpu", "CPU"), ("memory", "memory"),
                       ("kernel", "kernel"), ("os", "OS"), ("rustc", "rustc"), ("wrk", "wrk"),
                       ("hyperfine", "hyperfine"), ("commit", "tablegraph commit")):
        w(f"| {label} | {m[key]} |")
    w("")
    w(f"Settings: {DURATION} per wrk run, {REPS} interleaved repetitions, connections "
      f"{', '.join(map(str, CONNECTIONS))} (wrk threads = min({THREADS}, connections)), "
      f"simulated round trip {LATENCY_MS} ms, {COLD_RUNS} cold starts. Figures are medians with "
      "min–max over the repetitions. wrk, the servers and the embedded store share the machine's cores.")
    w("")

    runs = results.get("runs", [])
    calls = results.get("calls", {})
    lat_runs = results.get("latency_runs", [])
    lat_calls = results.get("latency_calls", {})

    def cell(workload, server, conns, runs=runs):
        return [r for r in runs if r["workload"] == workload and r["server"] == server
                and r["conns"] == conns]

    def medof(rs, key):
        return med([r[key] for r in rs])

    counted = {(r["server"], r["workload"]): r for r in results.get("instructions", [])}

    def tablegraph_runs(workload, conns):
        return cell(workload, "tablegraph", conns) if runs else []

    targets = []
    if runs:
        # Targets first.
        w0_count = ""
        mine, theirs = counted.get(("tablegraph", "W0")), counted.get(("b1", "W0"))
        if mine and theirs:
            w0_count = f"; instructions per request {mine['per_request'] / theirs['per_request']:.2f} × B1's"
        for conns in CONNECTIONS:
            tg_w0 = medof(cell("W0", "tablegraph", conns), "rps")
            b1_w0 = medof(cell("W0", "b1", conns), "rps")
            ratio = tg_w0 / b1_w0 if b1_w0 else float("nan")
            targets.append((f"W0 throughput ≥ 0.9 × B1 ({conns} conn.)",
                            f"{ratio:.2f} × B1 ({fmt(tg_w0, 0)} vs {fmt(b1_w0, 0)} req/s){w0_count}",
                            ratio >= 0.9))
        w2_checks = [c for c in results.get("checks", [])
                     if c["workload"] == "W2" and c.get("server", "tablegraph") == "tablegraph"]
        w2_single = len(calls.get("W2", []))
        ok = w2_single == 3 and all(c["check_expected"] == c["check_total"] > 0 and c["check_errors"] == 0
                                    for c in w2_checks)
        detail = "; ".join(f"{c['conns']} conn.: {c['check_expected']:,}/{c['check_total']:,} responses"
                           for c in w2_checks)
        targets.append((f"W2 exactly 3 storage calls at {' and '.join(map(str, CONNECTIONS))} connections",
                        f"{w2_single} in a single request; {detail}", ok))
        flat_calls = {n: len(calls.get(f"W3@{n}", [])) for n in LATENCY_W3_SIZES}
        flat = len(set(flat_calls.values())) == 1
        measured = "storage calls " + ", ".join(f"{n}: {c}" for n, c in flat_calls.items())
        if lat_runs:
            # Under the simulated round trip, the time spent waiting on the store (the p50 minus
            # the p50 of the same request without it) grows by less than one round trip from 1
            # to 100: a read per goal would add round trips. It may shrink: a call answers no
            # sooner than a round trip after it was sent, so the store's own work for 100 goals,
            # part of the p50 without the round trip, is hidden inside the wait.
            waits = {}
            for n in (1, 100):
                sim = medof(cell(f"W3@{n}", "tablegraph-latency", 1, lat_runs), "p50_ms")
                waits[n] = (sim, sim - medof(cell(f"W3@{n}", "tablegraph", 1), "p50_ms"))
            measured += (f"; at a {LATENCY_MS} ms round trip, p50 {waits[1][0]:.1f} ms (1 goal) and "
                         f"{waits[100][0]:.1f} ms (100 goals), of which waiting on storage "
                         f"{waits[1][1]:.1f} and {waits[100][1]:.1f} ms")
            growth = waits[100][1] - waits[1][1]
            flat = flat and growth == growth and growth < LATENCY_MS
        targets.append(("W3 flat up to 100 distinct keys per level", measured, flat))
    if runs and cell("W2", "b2", CONNECTIONS[0]):
        for conns in CONNECTIONS:
            tg_cpu = medof(cell("W2", "tablegraph", conns), "cpu_us")
            b2_cpu = medof(cell("W2", "b2", conns), "cpu_us")
            targets.append((f"W2 CPU per request ≤ B2's ({conns} conn.)",
                            f"{tg_cpu / b2_cpu:.2f} × B2 ({fmt(tg_cpu, 0)} vs {fmt(b2_cpu, 0)} µs)",
                            tg_cpu <= b2_cpu))
    if runs:
        two_cores = m.get("nproc") == "2"
        for name, limit in (("W2", 1000), ("W1", 100)):
            cpus = {conns: medof(cell(name, "tablegraph", conns), "cpu_us") for conns in CONNECTIONS}
            measured = ", ".join(f"{fmt(c, 0)} µs ({conns} conn.)" for conns, c in cpus.items())
            below = below_the_sdk(counted, name, tablegraph_runs)
            if below:
                instructions, estimates = below
                measured += (f"; the embedded store and the SDK alone: {instructions / 1e6:.2f} M "
                             f"instructions, ≈ " + " / ".join(f"{fmt(e, 0)} µs ({conns} conn.)"
                                                              for conns, e in estimates.items())
                             + " (\"Where the instructions go\")")
            if name == "W1":
                w0 = {conns: medof(cell("W0", "tablegraph", conns), "cpu_us") for conns in CONNECTIONS}
                measured += ("; W0, no storage call: "
                             + ", ".join(f"{fmt(c, 0)} µs ({conns} conn.)" for conns, c in w0.items()))
            targets.append((f"{name} CPU per request ≤ {limit:,} µs on 2 cores", measured,
                            all(c <= limit for c in cpus.values()) if two_cores else None))
        top, one = max(CONNECTIONS), min(CONNECTIONS)
        scale = medof(cell("W2", "tablegraph", top), "rps") / medof(cell("W2", "tablegraph", one), "rps")
        sixteen = m.get("nproc", "").isdigit() and int(m["nproc"]) >= 16 and top >= 64
        targets.append((f"W2 throughput at {top} conn. ≥ 8 × at {one} (16 cores, 64 conn.)",
                        f"{scale:.1f} × on {m.get('nproc')} cores", scale >= 8 if sixteen else None))
    if lat_runs:
        w2_lat = cell("W2", "tablegraph-latency", 1, lat_runs)
        p50 = medof(w2_lat, "p50_ms")
        cpu = medof(w2_lat, "cpu_us") / 1000
        store_cpu = medof([r for r in w2_lat if "store_cpu_us" in r], "store_cpu_us") / 1000
        measured = (f"{p50:.1f} ms: 3 round trips and {cpu:.1f} ms of CPU per request, "
                    f"{store_cpu:.1f} ms of it the embedded store's")
        # The store works inside the simulated waits; the rest runs before a call is sent or
        # after its answer came, so it adds to the round trips.
        measured += (f"; the {cpu - store_cpu:.1f} ms outside the embedded store add to the round "
                     "trips, where the target leaves 1 ms")
        targets.append((f"W2 p50 under a {LATENCY_MS} ms simulated round trip ≤ {3 * LATENCY_MS + 1} ms",
                        measured, p50 <= 3 * LATENCY_MS + 1))
    if runs:
        read_runs = [r for r in runs if r["server"] == "tablegraph" and r["workload"] != "W4"]
        peak = max(r["rss_mb"] for r in read_runs)
        many = [r["rss_mb"] for r in read_runs if r["workload"] == "W3@200" and r["conns"] == RSS_CONNECTIONS]
        w4_peak = max((r["rss_mb"] for r in runs if r["workload"] == "W4"), default=float("nan"))
        targets.append((f"peak RSS under load ≤ 100 MB (W3@200 at {RSS_CONNECTIONS} conn. included)",
                        f"{peak:.1f} MB (W0–W3, seeded store; W3@200 at {RSS_CONNECTIONS} conn.: "
                        f"{max(many, default=float('nan')):.1f} MB); W4 on its own empty store: {w4_peak:.1f} MB",
                        peak <= 100))
    if runs and cell("W2", CACHED, CONNECTIONS[0]):
        targets += cache_targets(results, cell, medof, lat_runs, m)
    if "cold" in results:
        c = results["cold"]
        targets.append(("cold start ≤ 300 ms (median)", f"{c['median_ms']:.1f} ms", c["median_ms"] <= 300))
    if targets:
        w("## Targets")
        w("")
        w("| target | measured | |")
        w("|---|---|---|")
        for target, measured, ok in targets:
            w(f"| {target} | {measured} | {verdict(ok)} |")
        w("")
        w("W0 is compared with B1 at each connection count, W2's CPU with B2's (the hand-written peer). "
          "The CPU and scaling targets are stated for a 2-core and a 16-core machine; elsewhere they "
          "are reported. W2's calls are counted in one request "
          "and in every response of a loaded run (below). W3 is flat when 1, 10, 50 and 100 goals make "
          "the same storage calls and, under the simulated round trip, the time waiting on storage "
          "at 100 goals exceeds that at 1 goal by less than one round trip (it may be less: the "
          "store's work for 100 goals overlaps the waits). Peak RSS is the highest VmHWM of "
          "the seeded server over the W0–W3 runs. Cold start is hyperfine's median.")
        w("")

    if runs:
        w("## Ratios (throughput)")
        w("")
        w("| connections | tablegraph W0 / B1 | tablegraph W2 / B1 | B1 / B0 | tablegraph W1 / B2 | "
          "tablegraph W2 / B2 | CPU per W1, tablegraph / B2 | CPU per W2, tablegraph / B2 |")
        w("|---|---|---|---|---|---|---|---|")
        for conns in CONNECTIONS:
            b0 = medof(cell("W0", "b0", conns), "rps")
            b1 = medof(cell("W0", "b1", conns), "rps")
            t0 = medof(cell("W0", "tablegraph", conns), "rps")
            t2 = medof(cell("W2", "tablegraph", conns), "rps")
            peer = []
            for key in ("rps", "cpu_us"):
                for name in ("W1", "W2"):
                    mine, theirs = medof(cell(name, "tablegraph", conns), key), medof(cell(name, "b2", conns), key)
                    peer.append(f"{mine / theirs:.2f}" if theirs == theirs and theirs else "–")
            w(f"| {conns} | {t0 / b1:.2f} | {t2 / b1:.3f} | {b1 / b0:.2f} | {' | '.join(peer)} |")
        w("")
        w("## Throughput, latency and cost")
        w("")
        w("| workload | server | conn. | req/s | p50 ms | p99 ms | CPU µs/req | peak RSS MB | storage calls |")
        w("|---|---|---|---|---|---|---|---|---|")
        order = ["W0", "W1", "W2"] + [f"W3@{n}" for n in W3_SIZES] + ["W4", "W5"]
        for name in order:
            for server in servers_of(name):
                for conns in sorted(set(CONNECTIONS) | {RSS_CONNECTIONS}):
                    rs = cell(name, server, conns)
                    if not rs:
                        continue
                    label = {"b0": "B0", "b1": "B1", "b2": "B2", "tablegraph": "tablegraph",
                             CACHED: "tablegraph, cache on"}[server]
                    n_calls = str(len(calls[name])) if server == "tablegraph" and name in calls else "–"
                    warm = results.get("cached_calls", {}).get(name)
                    if server == CACHED and warm:
                        n_calls = f"{len(warm['calls'])} ({len(warm['hits'])} cache hits)"
                    errors = sum(r["errors"] for r in rs)
                    w(f"| {name} | {label}{' ⚠ ' + str(errors) + ' errors' if errors else ''} | {conns} | "
                      f"{spread([r['rps'] for r in rs], 0)} | {spread([r['p50_ms'] for r in rs], 3)} | "
                      f"{spread([r['p99_ms'] for r in rs], 3)} | {spread([r['cpu_us'] for r in rs], 0)} | "
                      f"{spread([r['rss_mb'] for r in rs], 1)} | {n_calls} |")
        w("")
        w("W0 is `{ __typename }` (B0 ignores the body and answers a fixed one; B1 runs `{ hello }`). "
          "B2 serves W1 and W2 from its own copy of the same data set; it reads the team first, so "
          "its Koan page makes 4 storage calls (`bench/baselines/src/bin/b2.rs`). "
          "W4 runs on a fresh, empty tablegraph each time; its peak RSS includes the farms it wrote "
          "into the in-memory store during the run. "
          + ("" if all(r["rss_reset"] for r in runs) else
             "VmHWM could not be reset between runs here, so peak RSS is the process's peak so far. ")
          + "CPU is the server process's utime + stime over the run (the embedded store included) "
          f"divided by the requests answered; /proc counts in 1/{CLK_TCK} s ticks.")
        w("")
        w("## Storage calls")
        w("")
        w("One request of each workload with `x-tablegraph-storage-calls: 1`, before any load:")
        w("")
        w("| workload | calls | what |")
        w("|---|---|---|")
        for name in order:
            if name in calls:
                w(f"| {name} | {len(calls[name])} | {describe_calls(calls[name])} |")
        w("")
        w(f"Every response of a {CHECK_DURATION} wrk run with the header (a Lua `response` hook counts the "
          "`storageCalls` entries of each body):")
        w("")
        w("| workload | conn. | responses | with the single-request count | min–max calls | with errors |")
        w("|---|---|---|---|---|---|")
        for c in results.get("checks", []):
            on = c.get("server") == CACHED
            w(f"| {c['workload']}{' (cache on: calls and hits)' if on else ''} | {c['conns']} | "
              f"{c['check_total']:,} | {c['check_expected']:,} "
              f"(exactly {c['expected_calls']}) | {c['check_min_calls']}–{c['check_max_calls']} | "
              f"{c['check_errors']:,} |")
        w("")
        w(f"W3@200 asks for the first two pages of 100 in one request: `page1: goals(first: 100)` and "
          f"`page2: goals(first: 100, after: <endCursor of page 1>)` (a page holds at most 100). "
          f"The data set: team \"Bench\" with {results['seed']['goals']} goals, each with one lead (among "
          f"{results['seed']['users']} users) and memberships of \"Bench\" and \"Bench Partner\"; farm "
          "\"Bench Farm\" for W1.")
        w("")
    if lat_runs:
        w(f"## Latency under a simulated {LATENCY_MS} ms storage round trip")
        w("")
        w(f"`tablegraph serve --memory --simulated-latency-ms {LATENCY_MS}`, seeded with the same data set, "
          "1 connection:")
        w("")
        w("| workload | p50 ms | p99 ms | req/s | storage calls | p50 ms without the simulated round trip | "
          "waiting on storage (difference of the p50s) | CPU ms per request | of it, the embedded store's |")
        w("|---|---|---|---|---|---|---|---|---|")
        for name in ["W2"] + [f"W3@{n}" for n in LATENCY_W3_SIZES]:
            rs = cell(name, "tablegraph-latency", 1, lat_runs)
            local = medof(cell(name, "tablegraph", 1), "p50_ms")
            errors = sum(r["errors"] for r in rs)
            w(f"| {name}{' ⚠ ' + str(errors) + ' errors' if errors else ''} | "
              f"{spread([r['p50_ms'] for r in rs], 2)} | {spread([r['p99_ms'] for r in rs], 2)} | "
              f"{spread([r['rps'] for r in rs], 1)} | {len(lat_calls.get(name, []))} | {fmt(local, 2)} | "
              f"{fmt(medof(rs, 'p50_ms') - local, 2)} | {fmt(medof(rs, 'cpu_us') / 1000, 2)} | "
              f"{fmt(medof([r for r in rs if 'store_cpu_us' in r], 'store_cpu_us') / 1000, 2)} |")
        w("")
        waits = [(medof(cell(n, "tablegraph-latency", 1, lat_runs), "p50_ms")
                  - medof(cell(n, "tablegraph", 1), "p50_ms")) / max(len(lat_calls.get(n, [])), 1)
                 for n in ["W2"] + [f"W3@{k}" for k in LATENCY_W3_SIZES]]
        waits = [x for x in waits if x == x]
        w("The waiting column takes away what the same request costs without the simulated round trip "
          "(W2 and W3 at 1 connection, above): what is left is the time spent waiting on the store, "
          "which follows the number of storage calls (levels), not the number of goals"
          + (f"; here {min(waits):.1f}–{max(waits):.1f} ms per call for a simulated {LATENCY_MS} ms."
             if waits else ".")
          + f" A simulated call answers no sooner than {LATENCY_MS} ms after it was sent, as "
            "DynamoDB's do: the embedded store works on it during that wait (as DynamoDB does on "
            "its own side of the round trip), so only the server's own work adds to the round "
            "trips. The CPU columns count the whole process over the run, divided by the requests, "
            "the embedded store's threads (named `embedded-store`) included.")
        w("")
    if runs and cell("W2", CACHED, CONNECTIONS[0]):
        report_cache(w, results, cell, medof, lat_runs)
    if results.get("instructions"):
        w("## Instructions per request")
        w("")
        w("| workload | tablegraph | peer | peer's | tablegraph / peer |")
        w("|---|---|---|---|---|")
        for name, peer in (("W0", "b1"), ("W1", "b2"), ("W2", "b2")):
            mine, theirs = counted.get(("tablegraph", name)), counted.get((peer, name))
            if mine and theirs:
                w(f"| {name} | {mine['per_request']:,.0f} | {peer.upper()} | {theirs['per_request']:,.0f} | "
                  f"{mine['per_request'] / theirs['per_request']:.3f} |")
        w("")
        w("Each server runs under callgrind (`valgrind --tool=callgrind`), seeded with the same data "
          "set; after 5 requests to warm up, its counters are zeroed, the requests are sent one after "
          "another on one connection ("
          + ", ".join(f"{name}: {r['requests']}" for (server, name), r in counted.items()
                      if server == "tablegraph")
          + "), and the instructions of all of its threads (the embedded store's included) are divided "
          "by the requests. Unlike CPU time, the count does not move with what else the machine is "
          "doing: one server counted twice agrees to within 0.5 %, separate runs (new processes, "
          "new random ids and hash seeds) to within 2 % for W0 and 0.3 % for W2. It leaves out the "
          "kernel's work (sockets, waking threads) and how fast the instructions run (caches), "
          "which the CPU columns above include.")
        w("")
        report_parts(w, counted, tablegraph_runs)
    if "cold" in results:
        c = results["cold"]
        w("## Cold start")
        w("")
        w(f"From launching `tablegraph serve --memory` to the first answered `{{ __typename }}` (hyperfine, "
          f"{c['runs']} runs after 2 warm-ups, `bench/cold_start.sh`): median **{c['median_ms']:.1f} ms** "
          f"(mean {c['mean_ms']:.1f}, min {c['min_ms']:.1f}, max {c['max_ms']:.1f}).")
        w("")
    if os.path.dirname(RUN_DIR) == MACHINES:
        w(f"Raw data: `{os.path.relpath(RUN_DIR, ROOT)}/results.json` (the wrk outputs and server logs "
          "stayed on that machine).")
    else:
        w(f"Raw data: `{os.path.relpath(RUN_DIR, ROOT)}/` (wrk outputs, `runs.jsonl`, server logs; "
          "not committed).")
    w("")
    return lines, targets


def cache_targets(results, cell, medof, lat_runs, m):
    """The read cache's targets: against B2 and against the cache off, same run."""
    targets = []
    two_cores = m.get("nproc") == "2"
    # (workload, the server compared with, its name here, the most the cache may cost of it)
    for name, peer, label, factor in (("W2", "b2", "B2's", 0.25), ("W1", "tablegraph", "the cache off", 0.5)):
        for conns in CONNECTIONS:
            on = medof(cell(name, CACHED, conns), "cpu_us")
            theirs = medof(cell(name, peer, conns), "cpu_us")
            targets.append((f"{name} CPU per request ≤ {factor} × {label}, cache on, warm ({conns} conn.)",
                            f"{on / theirs:.2f} × ({fmt(on, 0)} vs {fmt(theirs, 0)} µs)",
                            on <= factor * theirs if two_cores else None))
    warm = cell("W2", "tablegraph-latency-cached", 1, lat_runs)
    if warm:
        p50 = medof(warm, "p50_ms")
        cold = medof(cell("W2", "tablegraph-latency", 1, lat_runs), "p50_ms")
        calls = results.get("latency_cached_calls", {})
        targets.append((f"W2 p50 under a {LATENCY_MS} ms simulated round trip ≤ 7 ms, cache on, warm",
                        f"{p50:.1f} ms ({len(calls.get('calls', []))} storage calls, "
                        f"{len(calls.get('hits', []))} cache hits); cache off: {cold:.1f} ms", p50 <= 7))
    peak = max(r["rss_mb"] for r in results["runs"] if r["server"] == CACHED)
    figures = results.get("cache_metrics", {})
    targets.append(("peak RSS with the cache at its default ≤ 150 MB",
                    f"{peak:.1f} MB (W1 and W2 at 1 and {max(CONNECTIONS)} conn.; the cache holds "
                    f"{figures.get('tablegraph_cache_bytes', float('nan')) / 1e6:.2f} MB of "
                    f"{figures.get('tablegraph_cache_entries', float('nan')):,.0f} entries)", peak <= 150))
    mixed = results.get("mixed")
    if mixed:
        targets.append(("W2 beside writes to its goals: every answer exact",
                        f"{mixed['pages']:,} pages beside {mixed['writes']:,} renames, "
                        f"{mixed['wrong']} titles older than an acknowledged rename or newer than the last sent"
                        + (f" ({'; '.join(mixed['examples'])})" if mixed["examples"] else ""),
                        mixed["wrong"] == 0 and mixed["pages"] > 0))
    return targets


def report_cache(w, results, cell, medof, lat_runs):
    """The section on the read cache: the three-way table and what /metrics said."""
    w("## Read cache")
    w("")
    w("Same run, same data set: B2 (the hand-written peer), tablegraph with `--cache-bytes 0` "
      "(the rows named tablegraph above) and tablegraph with the read cache at its default, warm "
      "(each workload's request was sent once before the runs, and the runs repeat it). Medians "
      "over the repetitions.")
    w("")
    w("| workload | conn. | req/s B2 | req/s cache off | req/s cache on | CPU µs B2 | CPU µs cache off | "
      "CPU µs cache on | cache on / B2 (CPU) | cache on / off (CPU) |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for name in B2_WORKLOADS:
        for conns in CONNECTIONS:
            f = {server: (medof(cell(name, server, conns), "rps"), medof(cell(name, server, conns), "cpu_us"))
                 for server in ("b2", "tablegraph", CACHED)}
            w(f"| {name} | {conns} | {fmt(f['b2'][0], 0)} | {fmt(f['tablegraph'][0], 0)} | "
              f"{fmt(f[CACHED][0], 0)} | {fmt(f['b2'][1], 0)} | {fmt(f['tablegraph'][1], 0)} | "
              f"{fmt(f[CACHED][1], 0)} | {f[CACHED][1] / f['b2'][1]:.2f} | "
              f"{f[CACHED][1] / f['tablegraph'][1]:.2f} |")
    w("")
    warm = cell("W2", "tablegraph-latency-cached", 1, lat_runs)
    if warm:
        w(f"W2 under the simulated {LATENCY_MS} ms round trip, 1 connection, warm: p50 "
          f"{spread([r['p50_ms'] for r in warm], 2)} ms, p99 {spread([r['p99_ms'] for r in warm], 2)} ms "
          f"(cache off: p50 {fmt(medof(cell('W2', 'tablegraph-latency', 1, lat_runs), 'p50_ms'), 2)} ms).")
        w("")
    mixed, figures = results.get("mixed"), results.get("cache_metrics", {})
    if mixed:
        w(f"Exactness beside writes: for {DURATION}, one client renamed the first 5 goals of the page in "
          "turn while 4 clients read the W2 page from the cached server; each page was checked "
          "against the renames acknowledged before it was asked for and those sent before it was "
          f"answered: {mixed['pages']:,} pages, {mixed['writes']:,} renames, {mixed['wrong']} titles out "
          "of place.")
        w("")
    if figures:
        p99 = figures.get("eviction_p99_le_s")
        hits = {k: figures.get(f'tablegraph_cache_hits_total{{read="{k}"}}', 0) for k in ("item", "page")}
        misses = {k: figures.get(f'tablegraph_cache_misses_total{{read="{k}"}}', 0) for k in ("item", "page")}
        w("The cached server's `/metrics` after that: "
          f"{hits['item']:,.0f} item and {hits['page']:,.0f} page hits, "
          f"{misses['item']:,.0f} item and {misses['page']:,.0f} page misses, "
          f"{figures.get('tablegraph_cache_bytes', 0) / 1e6:.2f} MB in the cache; a commit evicts its "
          "keys as it returns, and its stream record reached the cache within "
          + (f"{p99 * 1000:.0f} ms" if p99 else "–")
          + f" at the 99th percentile ({figures.get('eviction_records', 0):,.0f} records, "
          "`tablegraph_cache_eviction_delay_seconds`, from each node's `updatedAt`; a bucket's bound).")
        w("")


SETTINGS = ("DURATION", "REPS", "CONNECTIONS", "THREADS", "CHECK_DURATION", "WARMUP", "COLD_RUNS",
            "LATENCY_MS", "RSS_CONNECTIONS", "COMMAND", "SHORT", "NOTE")


def settings():
    return {name: globals()[name] for name in SETTINGS}


def report_only(run_dir):
    """Writes the report again from a run's results.json (with that run's settings)."""
    global RUN_DIR
    RUN_DIR = os.path.abspath(run_dir)
    with open(os.path.join(RUN_DIR, "results.json")) as f:
        results = json.load(f)
    globals().update(results["settings"])
    started = datetime.datetime.fromisoformat(results["started"])
    finished = datetime.datetime.fromisoformat(results.get("finished", results["started"]))
    summarize(results, report(results, started, finished))


def new_run_dir(prefix=""):
    """Where a run keeps its raw data: BENCH_RUN_DIR, else bench/results/<prefix><UTC time>."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.abspath(env("BENCH_RUN_DIR", os.path.join(BENCH, "results", prefix + now)))


# `--instructions`: the workloads counted, and how many requests each.
COMPARED_REQUESTS = {**INSTRUCTION_REQUESTS, "W3@200": 10, "W4": 100}


def compare_instructions(binaries):
    """`--instructions BIN [BIN ...]`: the instructions per request of W0, W1, W2, W3@200 and W4 for
    each build of tablegraph, counted as the benchmark's instructions phase counts them (each a
    fresh `serve --memory` under callgrind, seeded alike), then each build against the first.
    Counts of W1 to W3 move little with what else the machine runs (bench/README.md says how
    much), so the builds may run in any order."""
    global RUN_DIR
    for binary in binaries:
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            sys.exit(f"{binary} is not an executable")
    if not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        sys.exit("valgrind is not installed here (apt-get install valgrind)")
    RUN_DIR = new_run_dir("instructions-")
    for sub in ("logs", "callgrind"):
        os.makedirs(os.path.join(RUN_DIR, sub), exist_ok=True)
    counts = []
    try:
        for at, binary in enumerate(binaries):
            log(f"{binary}: seeding and counting under callgrind (about 2 min) ...")
            counted = count_tablegraph(f"build{at}", os.path.abspath(binary), PORT_BASE + 7,
                                       COMPARED_REQUESTS, parts=False)
            counts.append({name: value for name, (value, _) in counted.items()})
    finally:
        stop_all()
    log("")
    log("| build | " + " | ".join(COMPARED_REQUESTS) + " |")
    log("|---" * (len(COMPARED_REQUESTS) + 1) + "|")
    for binary, count in zip(binaries, counts):
        cells = [f"{count[name]:,.0f}" + ("" if count is counts[0] else
                                          f" ({count[name] / counts[0][name]:.3f} ×)")
                 for name in COMPARED_REQUESTS]
        log(f"| {binary} | " + " | ".join(cells) + " |")
    log(f"\nRequests counted: {', '.join(f'{name} {n}' for name, n in COMPARED_REQUESTS.items())}, "
        f"after 5 of each; the dumps are in {RUN_DIR}/callgrind")


USAGE = ("usage: bench.py                            (the benchmark; bash bench/run.sh runs it)\n"
         "       bench.py --report RUN_DIR            (a past run's report again)\n"
         "       bench.py --instructions BIN [BIN...] (builds of tablegraph counted)")


def main():
    global RUN_DIR
    # A stop (timeout, kill) goes through the `finally` that stops the servers, callgrind's too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if sys.argv[1:2] == ["--report"]:
        if len(sys.argv) != 3:
            sys.exit(USAGE)
        report_only(sys.argv[2])
        return
    if sys.argv[1:2] == ["--instructions"]:
        if len(sys.argv) < 3:
            sys.exit(USAGE)
        compare_instructions(sys.argv[2:])
        return
    if len(sys.argv) > 1:
        sys.exit(USAGE)
    RUN_DIR = new_run_dir()
    for sub in ("", "logs", "lua", "wrk"):
        os.makedirs(os.path.join(RUN_DIR, sub), exist_ok=True)
    for binary in (TABLEGRAPH, B0, B1, B2):
        if not os.access(binary, os.X_OK):
            sys.exit(f"{binary} is missing: build it first (bash bench/run.sh does)")

    d = seconds(DURATION)
    n_cells = (REPS * len(CONNECTIONS) * (3 + 3 + 3 + len(W3_SIZES) + 2) + 1
               + REPS * (RSS_CONNECTIONS not in CONNECTIONS))
    n_lat = REPS * (2 + len(LATENCY_W3_SIZES))
    estimate = (d * (n_cells * ("throughput" in PHASES) + n_lat * ("latency" in PHASES))
                + seconds(CHECK_DURATION) * (len(CONNECTIONS) + 8) + 4 * seconds(WARMUP) + 30
                + 240 * ("instructions" in PHASES))
    log(f"tablegraph benchmarks: {DURATION} per run, {REPS} repetitions; about "
        f"{estimate / 60:.0f} min. Raw data in {RUN_DIR}")
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {"settings": settings(), "started": started.isoformat(), "machine": machine()}
    try:
        if "throughput" in PHASES:
            phase_throughput(results)
        if "latency" in PHASES:
            phase_latency(results)
        if "cold" in PHASES:
            phase_cold(results)
        if "instructions" in PHASES:
            phase_instructions(results)
    finally:
        stop_all()
        with open(os.path.join(RUN_DIR, "results.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
    finished = datetime.datetime.now(datetime.timezone.utc)
    results["finished"] = finished.isoformat()
    with open(os.path.join(RUN_DIR, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    summarize(results, report(results, started, finished))


def summarize(results, targets):
    """Prints the ratios and the targets."""
    log("")
    for conns in CONNECTIONS:
        def rps(workload, server):
            return med([r["rps"] for r in results.get("runs", [])
                        if r["workload"] == workload and r["server"] == server and r["conns"] == conns])
        if results.get("runs"):
            b1 = rps("W0", "b1")
            log(f"{conns:>3} conn.: tablegraph(W0)/B1 = {rps('W0', 'tablegraph') / b1:.2f}   "
                f"tablegraph(W2)/B1 = {rps('W2', 'tablegraph') / b1:.3f}")
    for target, measured, ok in targets:
        log(f"{'reported' if ok is None else 'met     ' if ok else 'NOT MET '}  {target}: {measured}")
    log(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
