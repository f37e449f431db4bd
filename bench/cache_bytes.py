#!/usr/bin/env python3
"""Whether the read cache takes the memory --cache-bytes says: the growth of the resident memory
(VmRSS) of `serve --memory` over reads that fill its cache, against the same reads with the
cache off, compared with what the cache says it holds (`tablegraph_cache_bytes`).

Starts the release build twice (`--cache-bytes 0`, then `--cache-bytes BYTES`), creates N goals
with TITLE_BYTES-long titles in each, reads every goal by id twice (`nodes(ids:)`, 100 a
request, 4 clients), and prints both growths. Standard library only.

    N=50000 BYTES=$((64 << 20)) python3 bench/cache_bytes.py
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed

BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "release", "tablegraph")
N = int(os.environ.get("N", "20000"))
TITLE = int(os.environ.get("TITLE_BYTES", "1000"))
BYTES = int(os.environ.get("BYTES", str(16 << 20)))

def run(cache_bytes, port):
    p = subprocess.Popen([BIN, "serve", "--memory", "--listen", f"127.0.0.1:{port}", "--cache-bytes", str(cache_bytes)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/graphql"
    c = seed.Client(url)
    for _ in range(200):
        try:
            if c.post("{ __typename }")[0] == 200: break
        except OSError: time.sleep(0.05)
    def create(n):
        s, a = c.post("mutation($t: String!) { createGoal(input: { title: $t, kind: OBJECTIVE }) { id } }",
                      {"t": f"{n:06} " + "x" * TITLE})
        return a["data"]["createGoal"]["id"]
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(create, range(N)))
    def rss():
        for line in open(f"/proc/{p.pid}/status"):
            if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024
    before = rss()
    pre = urllib.request.urlopen(url.replace("/graphql", "/metrics")).read().decode()
    pre_bytes = float((re.findall(r"^tablegraph_cache_bytes (\S+)$", pre, re.M) or ["0"])[0])
    def read(chunk):
        s, a = c.post("query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Goal { title } } }", {"ids": chunk})
        assert s == 200 and not a.get("errors"), a
    chunks = [ids[i:i + 100] for i in range(0, len(ids), 100)]
    for _ in range(2):
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(read, chunks))
    after = rss()
    metrics = urllib.request.urlopen(url.replace("/graphql", "/metrics")).read().decode()
    m = {k: float(v) for k, v in re.findall(r"^(tablegraph_cache_(?:bytes|entries)) (\S+)$", metrics, re.M)}
    p.terminate(); p.wait()
    m["before_bytes"] = pre_bytes
    return before, after, m

off = run(0, 19601)
on = run(BYTES, 19602)
print(json.dumps({"n": N, "title_bytes": TITLE, "cache_bytes": BYTES,
                  "off_rss_before": off[0], "off_rss_after": off[1],
                  "on_rss_before": on[0], "on_rss_after": on[1], "on_metrics": on[2]}))
growth_off = off[1] - off[0]
growth_on = on[1] - on[0]
print(f"RSS growth over the reads: cache off {growth_off / 1e6:.1f} MB, cache on {growth_on / 1e6:.1f} MB; "
      f"difference {(growth_on - growth_off) / 1e6:.1f} MB; the cache says {on[2].get('tablegraph_cache_bytes', 0) / 1e6:.1f} MB "
      f"({on[2].get('tablegraph_cache_entries', 0):.0f} entries) of a {BYTES / 1e6:.1f} MB bound")
