"""Checks `fabtwin compare --json` of a simulated nccl-tests run against an imported log:
usage: check_comparison.py COMPARISON.json SIM.h5 HW.h5"""
import json
import math
import sys

import h5py

report = json.load(open(sys.argv[1]))
with h5py.File(sys.argv[2], "r") as sim, h5py.File(sys.argv[3], "r") as hw:
    assert sim.attrs["source"] == "simulation" and hw.attrs["source"] == "hardware"
    sim_rows = {(r["op"].decode(), r["type"].decode(), int(r["size"])): r
                for r in sim["collectives/results"][:]}
    hw_rows = {(r["op"].decode(), r["type"].decode(), int(r["size"])): r
               for r in hw["collectives/results"][:]}
assert report["a"]["source"] == "simulation" and report["b"]["source"] == "hardware"
[table] = [t for t in report["tables"] if t["table"] == "collectives/results"]
common = set(sim_rows) & set(hw_rows)
assert len(common) == len(table["matched"]) == report["matched_rows"] > 0, len(common)
assert len(table["only_in_b"]) == len(set(hw_rows) - set(sim_rows)) > 0
assert len(table["only_in_a"]) == len(set(sim_rows) - set(hw_rows))
for row in table["matched"]:
    op, type_, size = row["key"].split()
    key = (op, type_, int(size))
    for metric in ("time_us", "algbw", "busbw"):
        if hw_rows[key][metric] == 0:  # the log printed 0.00: no relative error
            m = row["metrics"][metric]
            assert m["relative_error"] is None
            continue
        m = row["metrics"][metric]
        assert m["a"] == sim_rows[key][metric] and m["b"] == hw_rows[key][metric]
        assert math.isclose(m["error"], m["a"] - m["b"])
        assert math.isclose(m["relative_error"], (m["a"] - m["b"]) / m["b"])
big = [r for r in table["matched"] if r["key"] == "all_reduce float 8388608"][0]
assert big["metrics"]["busbw"]["b"] == 27.5  # the log's busbw at 8 MiB
print("ok")
