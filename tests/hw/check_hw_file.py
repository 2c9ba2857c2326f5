"""Checks a fabtwin-hw measurement file against the simulated run of the same scenario:
usage: check_hw_file.py HW.h5 SIM.h5 COMPARE.json RANKS"""
import json
import sys

import h5py

hw_path, sim_path, compare_path, ranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with h5py.File(hw_path, "r") as hw, h5py.File(sim_path, "r") as sim:
    assert hw.attrs["source"] == "hardware", hw.attrs["source"]
    assert hw.attrs["schema_version"] == sim.attrs["schema_version"]
    assert len(hw.attrs["run_id"]) == 32 and len(hw.attrs["plan_hash"]) == 64
    assert hw.attrs["ranks"] == ranks, hw.attrs["ranks"]
    hw_scenario, sim_scenario = json.loads(hw.attrs["scenario"]), json.loads(sim.attrs["scenario"])
    assert hw_scenario["traffic"] == sim_scenario["traffic"]
    assert hw_scenario["hw"]["transport"] == "tcp"
    flows, sim_flows = hw["flows"][:], sim["flows"][:]
    # The same flows as the simulated run, every one completed, with an FCT and a goodput.
    assert list(flows["id"]) == list(sim_flows["id"])
    assert list(flows["size_bytes"]) == list(sim_flows["size_bytes"])
    assert (flows["src"] == sim_flows["src"]).all() and (flows["dst"] == sim_flows["dst"]).all()
    assert (flows["completed"] == 1).all(), flows["completed"]
    assert (flows["fct_ps"] > 0).all() and (flows["goodput_bps"] > 0).all()
    assert (flows["bytes_received"] == flows["size_bytes"]).all()
    assert (flows["packets_sent"] == -1).all()  # not counted per flow by hardware
    # Each flow's messages add up to its size; each QP's bytes to its messages'.
    messages, qps = hw["hw/messages"][:], hw["hw/qps"][:]
    for f in flows:
        part = messages[messages["flow"] == f["id"]]
        assert part["bytes"].sum() == f["size_bytes"], (f["id"], part["bytes"].sum())
        assert (part["completed"] == 1).all() and (part["received"] == 1).all()
        assert f["finish_ps"] == part["completed_ns"].max() * 1000
    for q in qps:
        assert q["bytes_sent"] == messages[messages["connection"] == q["connection"]]["bytes"].sum()
        assert q["messages_completed"] == q["messages"] > 0
        assert 0 < q["latency_p50_ns"] <= q["latency_p99_ns"] <= q["latency_p999_ns"] <= q["latency_max_ns"]
    assert set(qps["src_rank"]) == set(range(ranks)), set(qps["src_rank"])
    for name in ("hw/counters", "hw/counter_deltas", "hw/settings", "hw/observe_notes"):
        assert name in hw, name  # every host observed itself (TCP: no RDMA counters to read)
    names = [p.decode() for p in hw["hw/properties"]["name"]]
    assert "transport" in names and "plan_hash" in names, names
comparison = json.load(open(compare_path))
flows_table = [t for t in comparison["tables"] if t["table"] == "flows"][0]
assert len(flows_table["matched"]) == len(flows), len(flows_table["matched"])
assert not flows_table["only_in_a"] and not flows_table["only_in_b"]
print(f"{len(flows)} flows completed and matched with the simulated run")
