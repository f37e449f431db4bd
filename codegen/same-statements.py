"""Whether two outputs of statements.mjs hold the same statements, whatever their order.

    python3 codegen/same-statements.py golden.json served.json

Exits 0 when every statement (query, mutation, subscription, by name) has the same text in
both; otherwise prints, for each one that differs, its name and both texts, and exits 1.
"""

import json
import sys


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as golden_file:
        golden = json.load(golden_file)
    with open(sys.argv[2], encoding="utf-8") as served_file:
        served = json.load(served_file)
    differing = 0
    for kind in sorted(set(golden) | set(served)):
        ours, theirs = served.get(kind, {}), golden.get(kind, {})
        for name in sorted(set(ours) | set(theirs)):
            if ours.get(name) != theirs.get(name):
                differing += 1
                print(f"{kind}.{name}:")
                print(f"  transformer's: {theirs.get(name)!r}")
                print(f"  tablegraph's:  {ours.get(name)!r}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
