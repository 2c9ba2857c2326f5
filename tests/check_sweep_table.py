"""Checks a sweep's table.h5 against its table.csv: the same columns in the same order, the same
rows; numbers equal (an empty CSV cell is NaN in HDF5), axis texts equal.
usage: check_sweep_table.py OUTDIR"""
import csv
import math
import pathlib
import sys

import h5py

out = pathlib.Path(sys.argv[1])
with open(out / "table.csv", newline="") as f:
    rows = list(csv.reader(f))
header, body = rows[0], rows[1:]
with h5py.File(out / "table.h5", "r") as h5:
    table = h5["table"][()]
    assert h5.attrs["sweep_file"].endswith(".sweep.json"), h5.attrs["sweep_file"]
names = list(table.dtype.names)
assert names == header, f"columns differ:\n{names}\n{header}"
assert len(table) == len(body) > 0, (len(table), len(body))
for row, cells in zip(table, body):
    for name, cell in zip(names, cells):
        value = row[name]
        if isinstance(value, bytes):
            assert value.decode() == cell, (name, value, cell)
        elif cell == "":
            assert math.isnan(value), (name, value)
        else:
            assert float(cell) == value, (name, value, cell)
print(f"{len(body)} rows x {len(header)} columns agree")
