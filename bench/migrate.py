#!/usr/bin/env python3
"""How fast `tablegraph migrate` brings imported nodes to today's formats, on the embedded store.

For each size N (10,000 and 100,000 by default) it writes an export file of N farms as an
earlier version wrote them (each node with its unique value's item, but without its place in
the type index and without the counts behind `totalCount`), imports it into a fresh data
directory with `tablegraph import`, then times `tablegraph migrate` there, which puts every
farm in its type index (a write per node) and sets the counts. It then runs `tablegraph check`
to prove the table sound (and times it: a walk of the whole table). Prints one line per size
and, with --json, the figures.

    python3 bench/migrate.py [--binary target/release/tablegraph] [--sizes 10000,100000]
                             [--json FILE]

Standard library only. Nodes per second = N / the wall-clock time of `migrate` (it scans the
table once per shipped migration; the writes are what the batching is for).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid


def farm_lines(count):
    """The export lines of `count` farms and their unique values, in an earlier format."""
    stamp = "2025-01-01T00:00:00.000Z"
    for n in range(count):
        node_id = str(uuid.uuid7()) if hasattr(uuid, "uuid7") else f"0190{uuid.uuid4().hex[4:]}"
        name = f"Migrated Farm {n:07d}"
        key = f"NODE#{node_id}"
        node = {
            "PK": {"S": key},
            "SK": {"S": key},
            "__typename": {"S": "Farm"},
            "id": {"S": node_id},
            "name": {"S": name},
            "createdAt": {"S": stamp},
            "updatedAt": {"S": stamp},
            "version": {"N": "1"},
        }
        unique = f"Farm#name#{name.lower()}"
        value = {
            "PK": {"S": unique},
            "SK": {"S": unique},
            "__typename": {"S": "Farm#name"},
            "id": {"S": node_id},
        }
        yield json.dumps({"Item": node})
        yield json.dumps({"Item": value})


def run(command, **kwargs):
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    took = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return took, result


def measure(binary, size, schema):
    work = tempfile.mkdtemp(prefix="tablegraph-migrate-bench-")
    try:
        export = os.path.join(work, "farms.jsonl")
        with open(export, "w") as out:
            for line in farm_lines(size):
                out.write(line + "\n")
        data = os.path.join(work, "data")
        env = dict(os.environ, RUST_LOG="warn")
        common = ["--schema", schema, "--data-dir", data]
        run([binary, "import", export, *common], env=env)
        took, result = run(
            [binary, "migrate", *common, "--migrations", os.path.join(work, "none")], env=env
        )
        check_took, checked = run([binary, "check", *common], env=env)
        if "no violations" not in checked.stdout:
            sys.exit(f"check after migrate:\n{checked.stdout}")
        return {
            "nodes": size,
            "seconds": round(took, 2),
            "nodes_per_second": round(size / took),
            "migrate_stderr_lines": len(result.stderr.splitlines()),
            "check_seconds": round(check_took, 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/tablegraph")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--schema", default="schema.graphql")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        figures = measure(args.binary, size, args.schema)
        results.append(figures)
        print(
            f"migrate {figures['nodes']:>7} nodes: {figures['seconds']:>7.2f} s, "
            f"{figures['nodes_per_second']:>6} nodes/s; check {figures['check_seconds']:.2f} s",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
