#!/usr/bin/env python3
"""Wall-clock comparisons the way docs/performance.md takes them: the commands given run in turn,
round after round, so that a shared machine's slow and fast minutes fall on all of them alike.
Every other round runs them in reverse order: on the development VM the first of two large runs
in a row paid several times the second's system time (the host backing fresh memory), which
favoured whichever command came second.
Each run's event-loop seconds are read from its output (the engine line of `fabtwin run`, or the
`wall time` line of `fabtwin bench`). At the end it prints, per command, the median and the
fastest run, the fingerprint (flagged where one command's runs disagree) and, for `fabtwin bench`,
the largest peak memory. Against the first command it prints the median and range of the
per-round ratios; where a command runs another number of events than the first (another fabric
size), also the ratio of their costs per event, per round (issue 17's item 2). Where the runs
print the event loop's CPU time (`fabtwin bench`), it prints the median user and system seconds
per command, and the cost per event on user time too: system time is mostly the kernel zeroing
memory first touched, which a virtual machine's host can make vary from run to run.
Each --pair=A/B prints the same per-round ratios of A against B, for two commands neither of
which is the first (issue 17's items from one set: k16/k8 per event, one/two, n1/n2).

usage: scripts/alternate_runs.py ROUNDS LABEL=COMMAND [LABEL=COMMAND ...] [--pair=A/B ...]
e.g.:  scripts/alternate_runs.py 8 'one=build/fabtwin bench --threads 1' \\
                                    'two=build/fabtwin bench --threads 2'
"""
import re
import statistics
import subprocess
import sys

SECONDS = (re.compile(r"events in ([0-9.]+) s wall"), re.compile(r"^wall time\s+([0-9.]+) s", re.M))
FINGERPRINT = re.compile(r"^fingerprint\s+([0-9a-f]+)", re.M)
PEAK_MEMORY = re.compile(r"^peak memory\s+([0-9.]+) MB", re.M)
EVENTS = (re.compile(r"engine\s+([0-9]+) events in"), re.compile(r"^events\s+([0-9]+)$", re.M))
CPU = re.compile(r"^cpu time\s+([0-9.]+) s user, ([0-9.]+) s system", re.M)


def one_run(label, command):
    """The event-loop seconds, fingerprint (or None), peak memory in MB (or None), events (or
    None) and the event loop's (user, system) CPU seconds (or None) of one run."""
    run = subprocess.run(command, shell=True, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{label}: `{command}` exited with {run.returncode}:\n{run.stderr}")
    seconds = next((float(m.group(1)) for m in (p.search(run.stdout) for p in SECONDS) if m), None)
    if seconds is None:
        sys.exit(f"{label}: no event-loop time in the output of `{command}`")
    fingerprint = FINGERPRINT.search(run.stdout)
    memory = PEAK_MEMORY.search(run.stdout)
    events = next((int(m.group(1)) for m in (p.search(run.stdout) for p in EVENTS) if m), None)
    cpu = CPU.search(run.stdout)
    return (seconds, fingerprint.group(1) if fingerprint else None,
            float(memory.group(1)) if memory else None, events,
            (float(cpu.group(1)), float(cpu.group(2))) if cpu else None)


def ratios(seconds, events, cpu, a, b):
    """The per-round ratios of command a's time to b's, as text; where their event counts
    differ, also b's cost per event over a's, on the wall clock and (where printed) user time."""
    per_round = [x / y for x, y in zip(seconds[a], seconds[b])]
    text = (f"{a} / {b} per round: median {statistics.median(per_round):.2f}, "
            f"range {min(per_round):.2f} - {max(per_round):.2f}")
    if all(events[a]) and all(events[b]) and events[b] != events[a]:
        per_event = [(y / m) / (x / n) for x, y, n, m in zip(seconds[a], seconds[b], events[a], events[b])]
        text += (f"; {b} / {a} per event: median {statistics.median(per_event):.2f}, "
                 f"range {min(per_event):.2f} - {max(per_event):.2f}")
        if all(cpu[a]) and all(cpu[b]):
            per_event = [(y[0] / m) / (x[0] / n) for x, y, n, m in zip(cpu[a], cpu[b], events[a], events[b])]
            text += (f", on user time: median {statistics.median(per_event):.2f}, "
                     f"range {min(per_event):.2f} - {max(per_event):.2f}")
    return text


def main(argv):
    pairs = [a[len("--pair="):].split("/", 1) for a in argv[2:] if a.startswith("--pair=")]
    argv = [a for a in argv if not a.startswith("--pair=")]
    if len(argv) < 3 or not argv[1].isdigit() or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__)
    rounds = int(argv[1])
    commands = [a.split("=", 1) for a in argv[2:]]
    labels = [label for label, _ in commands]
    if any(len(p) != 2 or p[0] not in labels or p[1] not in labels for p in pairs):
        sys.exit(f"--pair=A/B names two of the labels {', '.join(labels)}\n\n{__doc__}")
    seconds = {label: [] for label, _ in commands}
    fingerprints = {label: set() for label, _ in commands}
    memory = {label: [] for label, _ in commands}
    events = {label: [] for label, _ in commands}
    cpu = {label: [] for label, _ in commands}
    for round_index in range(rounds):
        for label, command in commands if round_index % 2 == 0 else reversed(commands):
            wall, fingerprint, megabytes, count, user_system = one_run(label, command)
            seconds[label].append(wall)
            events[label].append(count)
            cpu[label].append(user_system)
            if fingerprint:
                fingerprints[label].add(fingerprint)
            if megabytes is not None:
                memory[label].append(megabytes)
        print("  ".join(f"{label} {seconds[label][-1]:.3f} s" for label, _ in commands), flush=True)
    first = commands[0][0]
    for label, _ in commands:
        line = f"{label}: median {statistics.median(seconds[label]):.3f} s, fastest {min(seconds[label]):.3f} s"
        if label != first:
            line += "; " + ratios(seconds, events, cpu, first, label)
        if len(fingerprints[label]) == 1:
            line += f"; fingerprint {next(iter(fingerprints[label]))}"
        elif fingerprints[label]:
            line += f"; FINGERPRINTS DIFFER between rounds: {' '.join(sorted(fingerprints[label]))}"
        if memory[label]:
            line += f"; peak memory {max(memory[label]):.1f} MB"
        if all(cpu[label]):
            system = [s for _, s in cpu[label]]
            line += (f"; cpu median {statistics.median(u for u, _ in cpu[label]):.3f} s user, "
                     f"{statistics.median(system):.3f} s system (range {min(system):.3f} - "
                     f"{max(system):.3f})")
        print(line)
    for a, b in pairs:
        print(f"pair {ratios(seconds, events, cpu, a, b)}")


if __name__ == "__main__":
    main(sys.argv)
