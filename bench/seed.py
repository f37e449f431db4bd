#!/usr/bin/env python3
"""Seeds a running tablegraph server (default schema) with the benchmark data set, through
GraphQL, with concurrent requests. Standard library only.

    python3 bench/seed.py http://127.0.0.1:18082/graphql     # prints the ids as JSON

The data set:

- team "Bench" with 200 goals ("Goal 000" ... "Goal 199", kind OBJECTIVE for the even numbers
  and KEY_RESULT for the odd ones: W5's filter matches half); every goal has three
  GoalMembership edges: to "Bench" (TEAM), to a second team "Bench Partner" (TEAM) and to one of
  20 users (LEAD, round robin), all with `since: 2024-05-01`;
- one farm "Bench Farm" (the target of W1, `node(id:)`).

It answers the team's id, the farm's id, and the cursor that ends the first page of 100 of the
team's goals (W3 with 200 goals asks for that page and the next one in one request).
"""

import http.client
import json
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

GOALS = 200
USERS = 20
CONCURRENCY = 16


class Client:
    """A GraphQL client with one keep-alive connection per thread."""

    def __init__(self, url, timeout=30.0):
        parts = urllib.parse.urlsplit(url)
        self.host = parts.hostname
        self.port = parts.port or 80
        self.path = parts.path or "/graphql"
        self.timeout = timeout
        self.local = threading.local()

    def _connection(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.local.conn = conn
        return conn

    def post(self, query, variables=None, headers=None):
        """Answers (status, parsed body)."""
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        all_headers = {"Content-Type": "application/json"}
        all_headers.update(headers or {})
        for attempt in range(3):
            conn = self._connection()
            try:
                conn.request("POST", self.path, body=body, headers=all_headers)
                response = conn.getresponse()
                data = response.read()
                return response.status, json.loads(data) if data else None
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")

    def graphql(self, query, variables=None, retries=8):
        """The `data` of a request that must succeed; retries errors the store may answer under
        concurrent writes (StorageUnavailable, VersionMismatch)."""
        for attempt in range(retries + 1):
            status, body = self.post(query, variables)
            errors = (body or {}).get("errors")
            if status == 200 and not errors:
                return body["data"]
            kinds = {(e.get("extensions") or {}).get("errorType") for e in errors or []}
            if attempt < retries and kinds & {"StorageUnavailable", "VersionMismatch"}:
                time.sleep(0.02 * (attempt + 1))
                continue
            raise RuntimeError(f"{query.split('(')[0]} {variables}: HTTP {status} {body}")
        raise AssertionError("unreachable")


def create(client, kind, fields):
    query = f"mutation($input: Create{kind}Input!) {{ create{kind}(input: $input) {{ id }} }}"
    return client.graphql(query, {"input": fields})[f"create{kind}"]["id"]


def member(client, goal, target, role):
    client.graphql(
        "mutation($g: ID!, $m: ID!, $r: GoalRole!) {"
        ' addGoalMembership(input: { from: $g, to: $m, role: $r, since: "2024-05-01" }) { role } }',
        {"g": goal, "m": target, "r": role},
    )


def seed(url, goals=GOALS, users=USERS, concurrency=CONCURRENCY):
    client = Client(url)
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        bench = pool.submit(create, client, "Team", {"name": "Bench"})
        partner = pool.submit(create, client, "Team", {"name": "Bench Partner"})
        farm = pool.submit(create, client, "Farm", {"name": "Bench Farm"})
        user_ids = list(
            pool.map(
                lambda n: create(
                    client, "User", {"name": f"Lead {n:02}", "email": f"lead{n:02}@bench.example"}
                ),
                range(users),
            )
        )
        # Created one after the other so that the team's goals (sorted by goal id, a UUIDv7,
        # within one role) come in title order.
        goal_ids = [create(client, "Goal", {"title": f"Goal {n:03}",
                                            "kind": ["OBJECTIVE", "KEY_RESULT"][n % 2]})
                    for n in range(goals)]
        bench, partner, farm = bench.result(), partner.result(), farm.result()
        edges = []
        for n, goal in enumerate(goal_ids):
            edges += [(goal, bench, "TEAM"), (goal, partner, "TEAM"),
                      (goal, user_ids[n % users], "LEAD")]
        list(pool.map(lambda e: member(client, *e), edges))
    page = client.graphql(
        "query($t: ID!) { team(id: $t) { goals(first: 100) { pageInfo { endCursor } } } }",
        {"t": bench},
    )
    return {
        "team": bench,
        "partner": partner,
        "farm": farm,
        "users": len(user_ids),
        "goals": len(goal_ids),
        "after100": page["team"]["goals"]["pageInfo"]["endCursor"],
        "seconds": round(time.monotonic() - started, 2),
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: seed.py http://HOST:PORT/graphql")
    print(json.dumps(seed(sys.argv[1])))
