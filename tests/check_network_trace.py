"""The network part of a --trace file agrees with the run's HDF5 result file.

Every PFC pause interval in /pfc_pauses is one "paused" slice on its node's process, with the
same start and duration; every queue-depth sample in /queue_depth is one counter event with the
same bytes; every link that went down in /link_events is a "down" slice from that time; every
deadlock in /deadlock/deadlocks is an instant at its detection time, and each queue of its cycle
a "stuck" slice from its stuck_since_ps to then. Usage: check_network_trace.py TRACE.json RESULT.h5
"""
import json
import sys

import h5py

trace_file, result_file = sys.argv[1], sys.argv[2]
events = json.load(open(trace_file))["traceEvents"]
with h5py.File(result_file, "r") as f:
    ports = f["ports"][:]
    pauses = f["pfc_pauses"][:]
    samples = f["queue_depth"][:]
    link_events = f["link_events"][:]
    deadlocks = f["deadlock/deadlocks"][:]
    cycles = f["deadlock/cycles"][:]

names = {}
for e in events:
    if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] >= 200000:
        names[e["pid"]] = e["args"]["name"].split(" ", 1)[1]


def key(node, start_us, dur_us):
    return (node, round(start_us * 1e6), round(dur_us * 1e6))


slices = sorted(
    key(names[e["pid"]], e["ts"], e["dur"])
    for e in events
    if e["ph"] == "X" and e["pid"] >= 200000 and e["name"].startswith("paused")
)
expected = sorted(
    key(ports[p["port_index"]]["node"].decode(), p["start_ps"] / 1e6, (p["end_ps"] - p["start_ps"]) / 1e6)
    for p in pauses
)
assert len(expected) > 0, "the scenario should pause"
assert slices == expected, f"{len(slices)} pause slices vs {len(expected)} pause records"

counters = sorted(
    (names[e["pid"]], round(e["ts"] * 1e6), e["args"]["bytes"])
    for e in events
    if e["ph"] == "C" and e["pid"] >= 200000
)
expected = sorted(
    (ports[s["port_index"]]["node"].decode(), int(s["time_ps"]), int(s["bytes"])) for s in samples
)
assert len(expected) > 0, "the scenario should sample queues"
assert counters == expected, f"{len(counters)} queue counters vs {len(expected)} samples"
links = 199999
downs = sorted(round(e["ts"] * 1e6) for e in events if e["pid"] == links and e["name"] == "down")
expected = sorted(int(e["time_ps"]) for e in link_events if not e["up"])
assert downs == expected, f"down slices {downs} vs link events {expected}"

instants = sorted(round(e["ts"] * 1e6) for e in events if e["pid"] == links and e["ph"] == "i")
assert instants == sorted(int(d["detected_at_ps"]) for d in deadlocks), "one instant per deadlock"
stuck = sorted(
    (names[e["pid"]], round(e["ts"] * 1e6), round((e["ts"] + e["dur"]) * 1e6))
    for e in events
    if e["ph"] == "X" and e["pid"] >= 200000 and e["name"].startswith("stuck")
)
expected = sorted(
    (q["node"].decode(), int(q["stuck_since_ps"]), int(deadlocks[q["deadlock_index"]]["detected_at_ps"]))
    for q in cycles
)
assert len(stuck) == len(expected) and all(
    a[0] == b[0] and abs(a[1] - b[1]) <= 1 and abs(a[2] - b[2]) <= 1 for a, b in zip(stuck, expected)
), f"stuck slices {stuck} vs cycle queues {expected}"
print(f"ok: {len(slices)} pause slices, {len(counters)} queue counters, {len(downs)} links down, "
      f"{len(instants)} deadlocks with {len(stuck)} stuck queues")
