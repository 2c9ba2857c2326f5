"""Compares two fabtwin result sets (the --json report and the HDF5 file) and fails on any
difference other than the wall-clock and engine figures and the run id, which are allowed to
differ."""
import json
import sys

import h5py
import numpy as np

json_a, json_b, h5_a, h5_b = sys.argv[1:5]
a, b = json.load(open(json_a)), json.load(open(json_b))
for report in (a, b):
    report.pop("engine")
    report.pop("run_id")
failures = [f"--json field {k} differs" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]

with h5py.File(h5_a, "r") as fa, h5py.File(h5_b, "r") as fb:
    for name in sorted(set(fa.attrs) | set(fb.attrs)):
        if name in ("wall_seconds", "run_id"):
            continue
        if name not in fa.attrs or name not in fb.attrs or fa.attrs[name] != fb.attrs[name]:
            failures.append(f"HDF5 attribute {name} differs")
    # Datasets at any depth (schema 4 puts the collectives' tables in a group).
    def dataset_names(h5):
        names = []
        h5.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        return set(names)

    names_a, names_b = dataset_names(fa), dataset_names(fb)
    for name in sorted(names_a | names_b):
        if name not in names_a or name not in names_b:
            failures.append(f"HDF5 dataset {name} missing on one side")
        elif fa[name].shape != fb[name].shape or not np.array_equal(fa[name][:], fb[name][:]):
            failures.append(f"HDF5 dataset {name} differs ({fa[name].shape} vs {fb[name].shape})")
    datasets = len(names_a)

for f in failures:
    print(f)
print(f"{datasets - len(failures) if not failures else 0} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
