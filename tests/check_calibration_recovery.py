#!/usr/bin/env python3
"""Calibration recovers what it is given (issue: recovery test). The simulator produces the
"measurements" of a small GPU fabric under hidden parameter values, with 1 % log-normal noise on
every collective time; fabtwin calibrate, handed the measurement file and the scenario alone (the
scenario states the default values), must find every identifiable parameter within 5 % and
predict the held-out sizes within 5 %, say which parameter the measurements cannot identify, and
write a parameter file that reproduces its calibrated run when layered with `extends`. Then:
the same calibration resumes from its stored points without simulating again, two parameters
that move the metrics alike are reported as not separately identifiable, and bad input is
refused with a clear message and no file written.

usage: check_calibration_recovery.py FABTWIN SCENARIO WORKDIR [NOISE_SEED]  (default 1)
"""
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

fabtwin, scenario, work = str(Path(sys.argv[1]).resolve()), Path(sys.argv[2]).resolve(), Path(sys.argv[3])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)

HIDDEN = {"nccl.net_step_latency": 7e6, "gpu.channel_rate": 60e9}  # ps, b/s
NOISE = 0.01
FIT_ON = "size<=4MiB"


def run(*args, expect=0):
    p = subprocess.run([fabtwin, *args], cwd=work, capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit(f"fabtwin {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p


def check(condition, what):
    if not condition:
        sys.exit("FAILED: " + what)
    print("ok:", what)


# The measurement: a run under the hidden values, with noise on each time (and its bandwidths).
run("run", str(scenario), "--set", "nccl.net_step_latency=7us", "--set",
    "gpu.channel_rate=60Gbps", "--out", "truth.h5")
shutil.copy(work / "truth.h5", work / "measured.h5")
rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
with h5py.File(work / "measured.h5", "r+") as f:
    rows = f["collectives/results"][...]
    factor = rows["busbw"] / rows["algbw"]
    rows["time_us"] *= np.exp(rng.normal(0, NOISE, len(rows)))
    rows["algbw"] = rows["size"] / (rows["time_us"] * 1e3)
    rows["busbw"] = rows["algbw"] * factor
    f["collectives/results"][...] = rows
    f.attrs["source"] = "hardware"

calibrate = ["calibrate", "--measured", "measured.h5", "--scenario", str(scenario),
             "--fit", "nccl.net_step_latency=2us:40us", "--fit", "gpu.channel_rate=20Gbps:640Gbps",
             "--fit", "nic.cc.rpg_ai_rate=1Mbps:400Mbps", "--fit-on", FIT_ON, "--jobs", "2",
             "--state", "state", "--out", "calibrated.json", "--json", "report.json",
             "--report", "report.h5"]
text = run(*calibrate).stdout
report = json.loads((work / "report.json").read_text())
params = {p["path"]: p for p in report["parameters"]}
for path, hidden in HIDDEN.items():
    p = params[path]
    error = p["fitted"] / hidden - 1
    check(p["status"] == "fitted" and abs(error) < 0.05,
          f"{path} recovered: {p['fitted']:.6g} against hidden {hidden:.6g} ({100 * error:+.2f} %)")
check(params["nic.cc.rpg_ai_rate"]["status"] == "no_effect" and
      params["nic.cc.rpg_ai_rate"]["fitted"] == params["nic.cc.rpg_ai_rate"]["initial"],
      "nic.cc.rpg_ai_rate (no congestion in this run) reported as not identifiable, left as it was")
whole = {(s["role"], s["family"]): s for s in report["slices"] if s["by"] == "all"}
held = whole[("held_out", "time")]
check(held["rows"] == 2 and held["error_after"] < 0.05,
      f"held-out sizes (8 and 16 MiB) predicted within 5 %: {100 * held['error_after']:.2f} %")
check(whole[("fit", "time")]["error_after"] < whole[("fit", "time")]["error_before"],
      "the fit lowered the in-sample error")
check("held-out error (validation" in text and "in-sample error (the slice fitted on; not validation)"
      in text, "the text report names in-sample and held-out errors for what they are")
for row in report["rows"]:
    check(row["role"] == ("fit" if row["size"] <= 4 << 20 else "held_out"),
          f"row {row['key']} {row['metric']} is in the slice it belongs to") if row["metric"] == "time_us" else None

# Provenance: the measurement's hash, the slice, the method; only identified values set.
calibrated = json.loads((work / "calibrated.json").read_text())
prov = calibrated["calibration"]
check(prov["cases"][0]["sha256"] == hashlib.sha256((work / "measured.h5").read_bytes()).hexdigest(),
      "the parameter file records the measurement file's SHA-256")
check(prov["fit_slice"] == FIT_ON and "nic.cc.rpg_ai_rate" in prov["not_identified"],
      "the parameter file records the slice and the parameter it could not identify")
check("rpg_ai_rate" not in json.dumps(calibrated.get("nic", {})) and
      set(calibrated["gpu"]) == {"channel_rate"} and set(calibrated["nccl"]) == {"net_step_latency"},
      "the parameter file sets the fitted parameters and nothing else")

# Layered with extends, the file reproduces the calibrated run exactly.
(work / "layered.json").write_text(json.dumps({"extends": [str(scenario), "calibrated.json"]}))
run("run", "layered.json", "--out", "layered.h5")
with h5py.File(work / "layered.h5") as f:
    layered = {int(r["size"]): float(r["time_us"]) for r in f["collectives/results"][...]}
after = {int(r["size"]): r["after"] for r in report["rows"] if r["metric"] == "time_us"}
check(layered == after, "a scenario extending the parameter file runs the calibrated values exactly")

# The HDF5 report holds the same records.
with h5py.File(work / "report.h5") as f:
    check(f.attrs["source"] == "calibration" and len(f["calibration/parameters"]) == 3 and
          len(f["calibration/rows"]) == len(report["rows"]) and len(f["calibration/slices"]) > 0,
          "the HDF5 report has the parameters, rows and slices")

# Resumed: every point is in the store, nothing is simulated again, the answer is the same.
again = json.loads(run(*calibrate[:-6], "--json", "-").stdout)
check(again["fit"]["simulated_runs"] == 0 and
      [p["fitted"] for p in again["parameters"]] == [p["fitted"] for p in report["parameters"]],
      "a second calibration with the same state simulates nothing and gives the same values")

# The proxy's step latency and the NIC's PCIe crossing both delay every network step alike:
# the measurements cannot tell them apart, so one is fitted and the other reported.
both = json.loads(run("calibrate", "--measured", "measured.h5", "--scenario", str(scenario),
                      "--fit", "nccl.net_step_latency=2us:40us", "--fit",
                      "gpu.pcie_latency=0.1us:5us", "--fit", "gpu.channel_rate=20Gbps:640Gbps",
                      "--fit-on", FIT_ON, "--state", "state2", "--json", "-").stdout)
status = {p["path"]: p["status"] for p in both["parameters"]}
check(status == {"nccl.net_step_latency": "fitted", "gpu.pcie_latency": "not_separately_identifiable",
                 "gpu.channel_rate": "fitted"},
      f"gpu.pcie_latency moves the times as nccl.net_step_latency does: not separately identifiable")

# Bad input: a clear message, exit status, and no file written.
for args, status, message in [
    (["--fit", "nccl.no_such=1:2"], 2, "--fit nccl.no_such=1:2: expected a declared parameter"),
    (["--fit", "nccl.net_step_latency=1us:5us"], 2, "lies outside the range"),
    (["--fit", "nccl.net_step_latency", "--fit-on", "bytes<4"], 2, "expected an attribute"),
    (["--fit", "nccl.net_step_latency", "--fit-on", "size>64GiB"], 2, "nothing to fit"),
    (["--fit", "nccl.net_step_latency", "--predict", "size>4MiB"], 2,
     "--fit-on (every measured row) and --predict size>4MiB overlap"),
    (["--fit", "nccl.net_step_latency", "--weight", "pauses=2"], 2,
     "--weight pauses=2: expected FAMILY=W"),
]:
    p = run("calibrate", "--measured", "measured.h5", "--scenario", str(scenario), *args,
            "--state", "state3", "--out", "bad.json", expect=status)
    check(message in p.stderr and not (work / "bad.json").exists() and
          not (work / "state3").exists(), f"refused with '{message}', nothing written")
(work / "not_hdf5.h5").write_text("nccl-tests log")
p = run("calibrate", "--measured", "not_hdf5.h5", "--scenario", str(scenario), "--fit",
        "nccl.net_step_latency", "--out", "bad.json", expect=1)
check("'not_hdf5.h5' is not an HDF5 file" in p.stderr and not (work / "bad.json").exists(),
      "a measurement that is not a result file is refused, naming it")
print("calibration recovery: all checks passed")
