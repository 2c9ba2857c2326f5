#!/usr/bin/env python3
"""A libFuzzer dictionary of scenario keys and keyword values, from the generated JSON schema
(scenarios/fabtwin.schema.json, which `fabtwin describe --json-schema` writes)."""
import json
import sys

schema = json.load(open(sys.argv[1]))
words = set()


def walk(node):
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            words.add('"%s":' % key)
        for v in node.get("enum", []):
            words.add(json.dumps(v))
        if "const" in node:
            words.add(json.dumps(node["const"]))
        for v in node.get("examples", []):
            words.add(json.dumps(v))
        for value in node.values():
            walk(value)
    elif isinstance(node, list):
        for value in node:
            walk(value)


walk(schema)
# Units and overrides the schema only implies.
words.update('"1%s"' % u for u in ("ps", "ns", "us", "ms", "s", "B", "KB", "MB", "GB", "KiB",
                                    "MiB", "GiB", "Mbps", "Gbps", "Tbps"))
words.update(['"99999999999999999999999999"', '"0B"', '"0us"', "1e308", "-1", "4294967296",
              "9223372036854775807", "\x00traffic[0].", "\x00topology.", "\x00fabric.", "\x00run.end="])


def quoted(word):
    """libFuzzer's dictionary syntax: printable ASCII as is, \" and \\, other bytes as \xAB."""
    out = ""
    for b in word.encode("utf-8"):
        c = chr(b)
        out += "\\" + c if c in '"\\' else c if 32 <= b < 127 else "\\x%02x" % b
    return '"%s"' % out


for w in sorted(words):
    print(quoted(w))
