"""Writes safetensors files for the tests, good ones and hostile ones.

usage: safetensors.py OUT MODE NAME:d0xd1 ...
MODE: good | truncated | f16 | lying-header | bad-json
Values are deterministic (index / 1000) so tests can predict outputs.
"""
import json
import struct
import sys

out, mode, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
header, blobs, offset = {}, [], 0
for spec in specs:
    name, dims = spec.split(":")
    shape = [int(d) for d in dims.split("x")]
    n = 1
    for d in shape:
        n *= d
    data = struct.pack("<%df" % n, *[(i % 97) / 1000.0 for i in range(n)])
    header[name] = {"dtype": "F16" if mode == "f16" else "F32", "shape": shape,
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
text = json.dumps(header).encode()
if mode == "bad-json":
    text = text[:-1]
length = len(text)
if mode == "lying-header":
    length = 1 << 40
payload = struct.pack("<Q", length) + text + b"".join(blobs)
if mode == "truncated":
    payload = payload[:-8]
with open(out, "wb") as f:
    f.write(payload)
