"""Runs a sweep, then each of its runs again as a plain `fabtwin run` of the same scenario (the base
file, the sweep's `set`, the point's axis values and its seed as --set overrides), and fails
unless every run's fingerprint and every metric of its record equal what `fabtwin run --json`
reports.
usage: check_sweep_points.py FABTWIN SWEEP OUTDIR"""
import json
import pathlib
import shutil
import subprocess
import sys

fabtwin, sweep, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
shutil.rmtree(out, ignore_errors=True)
subprocess.run([fabtwin, "sweep", str(sweep), "--out", str(out), "--jobs", "2"], check=True,
               stdout=subprocess.DEVNULL)
spec = json.loads(sweep.read_text())
base = sweep.parent / spec["scenario"]
records = [json.loads(p.read_text()) for p in sorted((out / "points").glob("*.json"))]
assert records, "no records"
for r in records:
    sets = [f"{k}={json.dumps(v)}" for k, v in spec.get("set", {}).items()]
    sets += [f"{k}={json.dumps(v)}" for k, v in r["axes"].items()]
    sets.append(f"run.seed={r['seed']}")
    args = [fabtwin, "run", str(base), "--json", "-"]
    for s in sets:
        args += ["--set", s]
    report = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    assert report["fingerprint"] == r["fingerprint"], (sets, report["fingerprint"], r["fingerprint"])
    assert report["metrics"] == r["metrics"], sets
print(f"{len(records)} runs equal to plain fabtwin runs (fingerprints and metrics)")
