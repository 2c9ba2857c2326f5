#!/usr/bin/env python3
"""Where two callgrind profiles differ, by source line or by function, per event.

    scripts/callgrind_lines.py A.out B.out --events EA,EB [--by line|function]
                               [--counters DLmr,DLmw] [--top N]

A and B are callgrind output files of builds with line tables (-DCMAKE_CXX_FLAGS=-g), EA and EB
the events each run processed (fabtwin prints them). Each row gives the chosen counters summed,
per event in A and in B, B's total less A's, and that difference's share of the whole
difference; rows come largest difference first. `--by line` keys a row by the compiled function
and the source line (code inlined into a function counts there, at the inlined line; a file
under the current folder is named relative to it), `--by function` by the function alone.
Calls' inclusive costs are not counted, so every instruction's cost is counted once, where it
ran: the rows add up to the profile's totals.

docs/performance.md ("Where k=16's extra lines come from") shows it in use.
"""
import argparse
import collections
import os
import re
import sys

_NAME = re.compile(r"\((\d+)\)(?:\s+(.*))?$")


def parse(path, counters):
    """Returns {(function, file, line): summed counters}."""
    names = {"fl": {}, "fn": {}}

    def name(kind, text):
        m = _NAME.match(text)
        if not m:
            return text
        if m.group(2):
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), "?")

    cost = collections.Counter()
    events = wanted = None
    positions = ["line"]  # what a cost line's leading fields are; callgrind's default
    at = [0]  # the last value of each, for the relative forms (+n, -n, *)
    function_file = file = function = "?"
    skip = False  # the cost line after calls= is the call's inclusive cost
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    with f:
        for raw in f:
            raw = raw.rstrip("\n")
            if raw.startswith("positions:"):
                positions = raw.split()[1:]
                if "line" not in positions:
                    sys.exit(f"{path}: no source lines in the profile "
                             f"(positions: {' '.join(positions)})")
                at = [0] * len(positions)
            elif raw.startswith("events:"):
                events = raw.split()[1:]
                missing = [c for c in counters if c not in events]
                if missing:
                    sys.exit(f"{path}: no counter {', '.join(missing)} (it has {' '.join(events)})")
                wanted = [events.index(c) for c in counters]
            elif raw.startswith("fl="):
                function_file = file = name("fl", raw[3:])
            elif raw.startswith(("fi=", "fe=")):  # code inlined from another file, and back
                file = name("fl", raw[3:])
            elif raw.startswith("fn="):
                function = name("fn", raw[3:])
                file = function_file
            elif raw.startswith(("cfl=", "cfi=")):
                name("fl", raw[4:])
            elif raw.startswith("cfn="):
                name("fn", raw[4:])
            elif raw.startswith("calls="):
                skip = True
            elif raw and (raw[0].isdigit() or raw[0] in "+-*"):
                fields = raw.split()
                for i, position in enumerate(fields[:len(positions)]):
                    if position[0] in "+-":
                        at[i] += int(position, 0)
                    elif position != "*":
                        at[i] = int(position, 0)
                if skip:
                    skip = False
                    continue
                if wanted is None:
                    sys.exit(f"{path}: a cost line comes before the events: line")
                values = fields[len(positions):]
                line = at[positions.index("line")]
                cost[(function, file, line)] += sum(
                    int(values[i]) for i in wanted if i < len(values))
    if events is None:
        sys.exit(f"{path}: not a callgrind profile (no events: line)")
    return cost


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--events", required=True, help="events of A and of B: EA,EB")
    parser.add_argument("--by", choices=("line", "function"), default="line")
    parser.add_argument("--counters", default="DLmr,DLmw")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    try:
        ea, eb = (int(x) for x in args.events.split(","))
    except ValueError:
        sys.exit(f"--events: expected two counts EA,EB, found {args.events!r}")
    if ea <= 0 or eb <= 0:
        sys.exit(f"--events: expected positive counts, found {args.events!r}")
    counters = args.counters.split(",")
    a, b = parse(args.a, counters), parse(args.b, counters)

    here = os.getcwd() + os.sep

    def key(k):
        function, file, line = k
        if args.by == "function":
            return function
        return f"{function}  {file.removeprefix(here)}:{line}"

    rows_a, rows_b = collections.Counter(), collections.Counter()
    for k, v in a.items():
        rows_a[key(k)] += v
    for k, v in b.items():
        rows_b[key(k)] += v
    total_a, total_b = sum(rows_a.values()), sum(rows_b.values())
    difference = total_b - total_a
    print(f"{'+'.join(counters)} per event: A {total_a / ea:.3f}, B {total_b / eb:.3f}; "
          f"B - A in all: {difference:+,}")
    print(f"{'A / event':>10} {'B / event':>10} {'B - A':>12} {'share':>7}  where")
    rows = sorted(set(rows_a) | set(rows_b), key=lambda r: (-(rows_b[r] - rows_a[r]), r))
    for r in rows[:args.top]:
        d = rows_b[r] - rows_a[r]
        share = f"{100 * d / difference:6.1f}%" if difference else "      -"
        print(f"{rows_a[r] / ea:10.3f} {rows_b[r] / eb:10.3f} {d:+12,} {share}  {r}")


if __name__ == "__main__":
    main()
