"""Prints what a gradients file holds, for grad.test to check.

usage: gradient_summary.py GRADS.safetensors
One line per tensor, in file order: its name, dtype, shape, whether any
element is non-zero, and whether its elements sum to 0 (to 1e-6 of the sum
of their magnitudes). The classifier's bias and weight columns sum to 0 for
softmax cross-entropy, whatever the weights: each loss node's logit
gradient, softmax minus a one-hot, sums to 0 over the classes.
"""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    blob = f.read()
(length,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + length])
base = 8 + length
for name, entry in header.items():
    if name == "__metadata__":
        continue
    a, b = entry["data_offsets"]
    values = struct.unpack("<%df" % ((b - a) // 4), blob[base + a:base + b])
    magnitude = sum(abs(v) for v in values)
    print("%s %s %s nonzero=%s zero-sum=%s" % (
        name, entry["dtype"], "x".join(str(d) for d in entry["shape"]),
        magnitude > 0, abs(sum(values)) <= 1e-6 * magnitude))
