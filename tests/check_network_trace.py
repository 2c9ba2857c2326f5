"""The network part of a --trace file agrees with the run's HDF5 result file.

Every PFC pause interval in /pfc_pauses is one "paused" slice on its node's process, with the
same start and duration; every queue-depth sample in /queue_depth is one counter event with the
same bytes. Usage: check_network_trace.py TRACE.json RESULT.h5
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
print(f"ok: {len(slices)} pause slices, {len(counters)} queue counters")
