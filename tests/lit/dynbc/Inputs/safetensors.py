"""Writes safetensors files for the tests, good ones and hostile ones.

usage: safetensors.py OUT MODE NAME:d0xd1[=V | @I=V] ...
MODE: good | truncated | f16 | lying-header | bad-json | overlap | duplicate
    | non-utf8 | empty-inside
Values are deterministic ((index % 97) / 1000) so tests can predict outputs;
'=V' sets every value of the tensor to V, '@I=V' only element I (V: any
Python float, e.g. nan, inf, 1e38).
"""
import json
import struct
import sys

out, mode, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
header, blobs, offset = {}, [], 0
for spec in specs:
    name, dims = spec.split(":")
    dims, _, value = dims.partition("=")
    dims, _, at = dims.partition("@")
    shape = [int(d) for d in dims.split("x")]
    n = 1
    for d in shape:
        n *= d
    values = [(i % 97) / 1000.0 for i in range(n)]
    if value and at:
        values[int(at)] = float(value)
    elif value:
        values = [float(value)] * n
    data = struct.pack("<%df" % n, *values)
    if mode == "non-utf8":
        name = name + "\udcff"
    header[name] = {"dtype": "F16" if mode == "f16" else "F32", "shape": shape,
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
if mode == "overlap":
    # The second tensor's bytes start inside the first's.
    last = list(header)[-1]
    a, b = header[last]["data_offsets"]
    header[last]["data_offsets"] = [a - 4, b - 4]
if mode == "empty-inside":
    # An empty last tensor whose (empty) range lies inside the first's bytes.
    last = list(header)[-1]
    header[last]["data_offsets"] = [4, 4]
text = json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogateescape")
if mode == "duplicate":
    # JSON allows it, Python's dict cannot hold it: repeat the first entry.
    first = list(header)[0]
    entry = json.dumps({first: header[first]})[1:-1].encode()
    text = text[:-1] + b", " + entry + b"}"
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
