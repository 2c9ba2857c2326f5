"""scripts/alternate_runs.py on stand-in runs whose times and event counts are known: the ratio
per round, and the ratio of costs per event only where the event counts differ, against the
first command and for a --pair of two others; a --pair naming no command refused; and the order
of the runs, reversed every other round.

usage: check_alternate_runs.py SCRIPT
"""
import os
import subprocess
import sys
import tempfile


def main(script):
    runs = {
        "a": 'printf "events 100\\nwall time 1.000 s\\n'
             'cpu time 0.900 s user, 0.100 s system (the event loop, all threads)\\nfingerprint aa\\n"',
        "b": 'printf "events 200\\nwall time 3.000 s\\n'
             'cpu time 2.400 s user, 0.600 s system (the event loop, all threads)\\nfingerprint bb\\n"',
        "c": 'printf "engine      100 events in 2.000 s wall on 1 thread(s)\\n"',
    }
    out = subprocess.run([sys.executable, script, "2"] + [f"{k}={v}" for k, v in runs.items()] +
                         ["--pair=c/b"], capture_output=True, text=True, check=True).stdout
    lines = {line.split(":")[0]: line for line in out.splitlines() if ": median" in line}
    lines["pair"] = next((line for line in out.splitlines() if line.startswith("pair ")), "")
    expected = {
        "b": ["a / b per round: median 0.33", "b / a per event: median 1.50, range 1.50 - 1.50",
              "on user time: median 1.33, range 1.33 - 1.33", "fingerprint bb",
              "cpu median 2.400 s user, 0.600 s system (range 0.600 - 0.600)"],
        "a": ["cpu median 0.900 s user, 0.100 s system"],
        "c": ["a / c per round: median 0.50"],
        # c: 2 s for 100 events, b: 3 s for 200; c prints no CPU time, so no user-time ratio.
        "pair": ["c / b per round: median 0.67, range 0.67 - 0.67",
                 "b / c per event: median 0.75, range 0.75 - 0.75"],
    }
    failures = [f"{label}: '{text}' not in: {lines.get(label)}"
                for label, texts in expected.items() for text in texts
                if text not in lines.get(label, "")]
    if "per event" in lines.get("c", "") or "cpu" in lines.get("c", ""):
        failures.append(f"c runs as many events as a and prints no CPU time, yet: {lines['c']}")
    if "user time" in lines["pair"]:
        failures.append(f"c prints no CPU time, yet the pair has a user-time ratio: {lines['pair']}")
    refused = subprocess.run([sys.executable, script, "1", f"a={runs['a']}", "--pair=a/z"],
                             capture_output=True, text=True)
    if refused.returncode == 0 or "--pair=A/B names two of the labels a" not in refused.stderr:
        failures.append(f"--pair=a/z accepted: {refused.returncode} {refused.stderr}")
    with tempfile.TemporaryDirectory() as folder:
        order = os.path.join(folder, "order")
        runs = {k: f'echo {k} >> {order}; printf "wall time 1.000 s\\n"' for k in "abc"}
        subprocess.run([sys.executable, script, "3"] + [f"{k}={v}" for k, v in runs.items()],
                       capture_output=True, text=True, check=True)
        with open(order) as f:
            ran = f.read().split()
        if ran != list("abccbaabc"):
            failures.append(f"runs not in the order a b c, then c b a, then a b c: {ran}")
    if failures:
        sys.exit("\n".join(failures))
    print("alternate_runs: ratios per round and per event as expected")


if __name__ == "__main__":
    main(sys.argv[1])
