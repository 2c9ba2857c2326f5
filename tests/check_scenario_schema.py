"""Checks every scenario file in scenarios/ against scenarios/fabtwin.schema.json, and that the
schema rejects a few broken documents (so the check can fail)."""
import json
import pathlib
import sys

import jsonschema

root = pathlib.Path(sys.argv[1])
schema = json.loads((root / "scenarios/fabtwin.schema.json").read_text())
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)

# Sweep files (*.sweep.json) are not scenarios (docs/sweeps.md); their points are checked by
# `fabtwin sweep --dry-run` (tests/CMakeLists.txt).
# Nor is what a sweep writes beside its file (NAME.sweep/).
files = sorted(p for p in (root / "scenarios").rglob("*.json")
               if p.name != "fabtwin.schema.json" and not p.name.endswith(".sweep.json")
               and not any(part.endswith(".sweep") for part in p.parts))
assert files, "no scenario files found"
passed = failures = 0
for path in files:
    errors = list(validator.iter_errors(json.loads(path.read_text())))
    for e in errors:
        print(f"{path.relative_to(root)}: at {'.'.join(map(str, e.path)) or '(top)'}: {e.message}")
    failures += bool(errors)
    passed += not errors

broken = [
    {"fabric": {"link": {"rate": "100G"}}},
    {"topology": {"type": "torus"}},
    {"traffic": [{"type": "incast"}]},
    {"nic": {"mtu": 4096}},
    {"unknown": {}},
]
for doc in broken:
    if validator.is_valid(doc):
        print(f"schema accepted a broken document: {doc}")
        failures += 1

print(f"{passed} passed, {failures} failed")
sys.exit(1 if failures else 0)
