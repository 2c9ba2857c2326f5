"""Checks measurement files written by `fabtwin import` against the logs they came from
(tests/data/logs): usage: check_measurement_file.py KIND FILE.h5 FILE.json"""
import json
import sys

import h5py

kind, h5_path, json_path = sys.argv[1:4]
report = json.load(open(json_path))
with h5py.File(h5_path, "r") as h5:
    assert h5.attrs["source"] == "hardware", h5.attrs["source"]
    assert h5.attrs["schema_version"] == 4
    assert h5.attrs["importer"] == kind
    assert len(h5.attrs["run_id"]) == 32
    for name in ("perftest/bandwidth", "perftest/latency", "hw/properties", "hw/perftest_runs",
                 "hw/perftest_settings", "hw/nccl_tests", "hw/devices", "hw/nccl_info"):
        assert name in h5, name
    if kind == "nccl-tests":
        results = h5["collectives/results"][:]
        assert len(results) == 31
        # "     8388608       2097152     float     sum      -1    571.9   14.67   27.50      0 ..."
        row = results[results["size"] == 8388608][0]
        assert row["op"].decode() == "all_reduce" and row["type"].decode() == "float"
        assert row["redop"].decode() == "sum" and row["root"] == -1
        assert row["count"] == 2097152 and row["ranks"] == 16 and row["iterations"] == 20
        assert abs(row["time_us"] - 571.9) < 1e-9 and abs(row["busbw"] - 27.50) < 1e-9
        assert row["start_ps"] == -1
        gpus = [g.decode() for g in h5["collectives/gpus"]["name"]]
        assert gpus[0] == "ztan-mig-235z/gpu0" and gpus[15] == "ztan-mig-gq73/gpu7", gpus
        assert len(h5["collectives/rank_gpus"]) == 31 * 16
        extra = h5["hw/nccl_tests"][:]
        assert abs(extra[20]["in_place_time_us"] - 563.5) < 1e-9 and extra[20]["line"] == 52
        devices = h5["hw/devices"][:]
        assert devices[10]["name"].decode() == "NVIDIA H100 80GB HBM3"
        assert devices[10]["bus"].decode() == "0000:0b:00"
        props = {p["name"].decode(): p["value"].decode() for p in h5["hw/properties"][:]}
        assert props["avg_bus_bandwidth"] == "70.742" and props["program"] == "all_reduce_perf"
        assert len(h5["perftest/bandwidth"]) == 0
        table = report["tables"]["collectives/results"]
        assert len(table) == 31 and table[20]["busbw"] == 27.5 and table[20]["size"] == 8388608
    else:
        bw = h5["perftest/bandwidth"][:]
        assert len(bw) == 3
        # " 4          5000           0.084507            0.084457            2.639276"
        assert bw[1]["bytes"] == 4 and bw[1]["iterations"] == 5000
        assert abs(bw[1]["bw_average_bps"] - 0.084457e9) < 1e-3
        assert abs(bw[1]["bw_peak_bps"] - 0.084507e9) < 1e-3
        assert bw[1]["test"].decode() == "ib_write_bw" and bw[1]["sl"] == -1
        run = h5["hw/perftest_runs"][0]
        assert run["device"].decode() == "mlx5_0" and run["link_type"].decode() == "IB"
        assert run["mtu_bytes"] == 4096 and run["gid_index"] == -1
        assert run["local_qpn"].decode() == "0x0032" and run["remote_lid"].decode() == "0x01"
        settings = {(s["name"].decode(), s["value"].decode()) for s in h5["hw/perftest_settings"][:]}
        assert ("TX depth", "128") in settings and ("Mtu", "4096[B]") in settings
        assert "collectives" not in h5
        assert len(h5["perftest/latency"]) == 0
        assert report["tables"]["perftest/bandwidth"][1]["bw_average_bps"] == bw[1]["bw_average_bps"]
print("ok")
