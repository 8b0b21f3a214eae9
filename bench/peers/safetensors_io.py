# Reading and writing float32 safetensors files, shared by the PyTorch peers (numpy only).
"""The subset of safetensors the peers need: F32 tensors, no metadata.

write_safetensors streams each tensor to the file after the header, so a
large parameter set (CLEVR's features, MoE's 10,000 experts) is never
copied into one buffer first.
"""

import json
import struct

import numpy as np


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, a in tensors.items():
        n = a.size * 4
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit("%s: tensor %r is %s, not F32" % (path, name, t["dtype"]))
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"])
    return out
