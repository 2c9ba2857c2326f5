"""scripts/callgrind_lines.py on two small profiles in callgrind's format whose costs are known:
compressed names given once and then by number, positions relative to the last one and `*`, a
file inlined into a function (fi=/fe=) and a new function back in its own file, instruction
addresses before the lines (--dump-instr=yes), and a call whose inclusive cost must not be
counted; the rows per event by line and by function, and a counter the profile lacks or bad
event counts refused with a message.

usage: check_callgrind_lines.py SCRIPT
"""
import os
import subprocess
import sys
import tempfile

HEADER = """version: 1
creator: callgrind-3.19.0
events: Ir DLmr DLmw
fl=(1) /src/x.cpp
fn=(1) f()
"""

A = HEADER + """10 100 3 1
+2 50 2 0
cfl=(1)
cfn=(2) g()
calls=1 20
12 1000 500 500
* 10 1 0
fn=(2)
20 30 4 0
"""

B = HEADER + """10 100 6 4
fi=(2) /src/y.h
5 7 6 2
fe=(1)
12 50 3 0
fi=(2)
5 0 0 0
fn=(2) g()
20 30 4 0
"""

# B again as callgrind writes it with --dump-instr=yes: an address before each line, hex and
# relative like the lines.
B_INSTR = B.replace("creator: callgrind-3.19.0\n",
                    "creator: callgrind-3.19.0\npositions: instr line\n").replace(
    "10 100 6 4", "0x4010 10 100 6 4").replace("5 7 6 2", "+0x8 5 7 6 2").replace(
    "12 50 3 0", "+4 12 50 3 0").replace("5 0 0 0", "* 5 0 0 0").replace(
    "20 30 4 0", "0x5000 20 30 4 0")


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def main(script):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.out"), os.path.join(tmp, "b.out")
        with open(a, "w") as f:
            f.write(A)
        with open(b, "w") as f:
            f.write(B)
        # A: f 10 -> 4, f 12 -> 2 + 1 (the call's 1000 is inclusive: not counted), g 20 -> 4;
        # B: f 10 -> 10, f y.h:5 -> 8, f 12 -> 3, g 20 -> 4 (in x.cpp: a new function is in its
        # fl= file, whatever file the one before ended in). Events: 2 and 4.
        b_instr = os.path.join(tmp, "b-instr.out")
        with open(b_instr, "w") as f:
            f.write(B_INSTR)
        by_line = run(script, a, b, "--events", "2,4").stdout
        if run(script, a, b_instr, "--events", "2,4").stdout != by_line:
            failures.append("a profile with instruction addresses reads otherwise than without")
        out = by_line
        expected = [
            "DLmr+DLmw per event: A 5.500, B 6.250; B - A in all: +14",
            "     0.000      2.000           +8   57.1%  f()  /src/y.h:5",
            "     2.000      2.500           +6   42.9%  f()  /src/x.cpp:10",
            "     1.500      0.750           +0    0.0%  f()  /src/x.cpp:12",
            "     2.000      1.000           +0    0.0%  g()  /src/x.cpp:20",
        ]
        lines = out.splitlines()
        for text in expected:
            if text not in lines:
                failures.append(f"by line: {text!r} not in:\n{out}")
        order = [line for line in lines if line.endswith(("y.h:5", "x.cpp:10"))]
        if order and not order[0].endswith("y.h:5"):
            failures.append(f"the largest difference does not come first:\n{out}")

        out = run(script, a, b, "--events", "2,4", "--by", "function").stdout
        for text in ["     3.500      5.250          +14  100.0%  f()",
                     "     2.000      1.000           +0    0.0%  g()"]:
            if text not in out.splitlines():
                failures.append(f"by function: {text!r} not in:\n{out}")

        out = run(script, a, b, "--events", "2,4", "--counters", "Ir").stdout
        if "Ir per event: A 95.000, B 46.750; B - A in all: -3" not in out:
            failures.append(f"--counters Ir: wrong totals:\n{out}")

        refused = run(script, a, b, "--events", "2,4", "--counters", "DLmr,D1mr")
        if refused.returncode == 0 or "no counter D1mr" not in refused.stderr:
            failures.append(f"a missing counter not refused: {refused.stderr!r}")
        for bad in ["2", "2,0", "x,4"]:
            refused = run(script, a, b, "--events", bad)
            if refused.returncode == 0 or "--events" not in refused.stderr:
                failures.append(f"--events {bad} not refused: {refused.stderr!r}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
