"""Checks what `fabtwin fluid --out H5 --json JSON` wrote for N flows: the root attributes, the
/fluid_queue and /qp_rates tables, and that the JSON summary is the HDF5 trajectory's.
usage: check_fluid_file.py H5 JSON N"""
import json
import sys

import h5py
import numpy as np

h5_path, json_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
report = json.load(open(json_path))
with h5py.File(h5_path, "r") as f:
    a = dict(f.attrs)
    assert a["source"] == "fluid", a["source"]
    assert a["schema_version"] == 4
    assert a["flows"] == n, a["flows"]
    assert len(a["run_id"]) == 32 and a["run_id"] == report["run_id"]
    assert json.loads(a["scenario"])["traffic"][0]["senders"] == n
    q = f["fluid_queue"][()]
    r = f["qp_rates"][()]
assert list(q.dtype.names) == ["time_ps", "queue_bytes", "marking_probability", "arrival_bps"]
assert list(r.dtype.names) == ["time_ps", "flow", "rate_bps", "target_bps", "alpha"]
sample = a["sample_ps"]
assert np.array_equal(q["time_ps"], np.arange(len(q)) * sample), "one row per sample"
assert q["time_ps"][-1] == a["duration_ps"]
assert (q["queue_bytes"] >= 0).all()
assert ((q["marking_probability"] >= 0) & (q["marking_probability"] <= 1)).all()
# Every flow sends throughout (long flows starting at 0): N rows per sample, by flow.
assert len(r) == n * len(q), (len(r), len(q))
assert np.array_equal(r["flow"], np.tile(np.arange(n), len(q)))
assert (r["rate_bps"] <= a["line_rate_bps"]).all() and (r["rate_bps"] >= 0).all()
assert ((r["alpha"] >= 0) & (r["alpha"] <= 1)).all()
rates = r["rate_bps"].reshape(len(q), n).sum(axis=1)
assert np.allclose(rates, q["arrival_bps"], rtol=1e-9, atol=n), "arrival is the sum of R_C"
# The summary is the trajectory's: mean over the window's samples.
t = report["trajectory"]
window = q["time_ps"] >= t["window_start_ps"]
assert abs(q["queue_bytes"][window].mean() / t["mean_queue_bytes"] - 1) < 1e-9
assert q["queue_bytes"][window].max() == t["max_queue_bytes"]
fp = report["fixed_point"]["queue_bytes"]
assert a["fixed_point_queue_bytes"] == fp
assert abs(t["mean_queue_bytes"] / fp - 1) < 0.02, (t["mean_queue_bytes"], fp)
assert not t["oscillating"]
print(f"fluid file ok: {len(q)} samples, {n} flows, mean queue {t['mean_queue_bytes']:.0f} B, q* {fp:.0f} B")
