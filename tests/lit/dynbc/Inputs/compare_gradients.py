"""Compares two gradient files tensor by tensor, for the batched-gradient
tests.

usage: compare_gradients.py EXPECTED.safetensors ACTUAL.safetensors [RTOL]
Both must hold the same tensors (names, shapes). Prints one line per tensor:
its name and the largest absolute difference relative to the largest
magnitude of the expected tensor, then "ok" or "MISMATCH" against RTOL
(default 1e-4); exits 1 on any mismatch or when the names differ.
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    base = 8 + length
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        a, b = entry["data_offsets"]
        out[name] = (tuple(entry["shape"]),
                     struct.unpack("<%df" % ((b - a) // 4),
                                   blob[base + a:base + b]))
    return out


expected, actual = read(sys.argv[1]), read(sys.argv[2])
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if sorted(expected) != sorted(actual):
    print("tensors differ: %s against %s" % (sorted(expected), sorted(actual)))
    sys.exit(1)
bad = False
for name in sorted(expected):
    (es, ev), (as_, av) = expected[name], actual[name]
    if es != as_:
        print("%s: shape %s against %s MISMATCH" % (name, es, as_))
        bad = True
        continue
    scale = max([abs(v) for v in ev] + [1e-30])
    err = max([abs(x - y) for x, y in zip(ev, av)] + [0.0]) / scale
    ok = err <= rtol
    bad |= not ok
    print("%s: max error %.2e of its largest element %s" %
          (name, err, "ok" if ok else "MISMATCH"))
sys.exit(1 if bad else 0)
