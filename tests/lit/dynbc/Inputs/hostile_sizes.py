"""Writes inputs whose sizes, not their syntax, are hostile, for
hostile-sizes.test: types nested past the parser's stack, affine maps of
100,000 terms, tensor types whose element count wraps int64, and
mixture-of-experts documents that are only wrong in a streamed batch.

usage: hostile_sizes.py OUT_DIR ONE_LAUNCH_MLIR MOE_JSON_ERRORS_PY
"""
import copy
import json
import os
import sys

out, one_launch, moe_errors = sys.argv[1:4]


def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)


deep = "tuple<" * 30000 + "i32" + ">" * 30000
write("deep-attr.mlir", "module attributes {x = %s} {}\n" % deep)
write("deep-arg.mlir", "func.func private @f(%s)\n" % deep)
write("affine.mlir", "module attributes {x = affine_map<(d0) -> (%s)>} {}\n"
      % " + ".join(["d0"] * 100000))

with open(one_launch) as f:
    model = f.read()
# Element counts that wrap int64 (2^62 * 4 bytes) and reach exactly 2^64.
write("wrap2.mlir", model + "dynb.param @Big : tensor<2147483648x2147483648xf32>\n")
write("wrap4.mlir", model +
      "dynb.param @Big : tensor<65536x65536x65536x65536xf32>\n")

# The mixture-of-experts document moe-json.test breaks, broken in its second
# instance only, as JSON Lines: one header line, then one instance a line.
sys.path.insert(0, os.path.dirname(os.path.abspath(moe_errors)))
from moe_json_errors import GOOD  # noqa: E402


def moe_variant(name, change):
    doc = copy.deepcopy(GOOD)
    change(doc)
    header = {"dynb": doc["dynb"], "model": doc["model"]}
    lines = [json.dumps(header)] + [json.dumps(i) for i in doc["instances"]]
    write(name + ".jsonl", "\n".join(lines) + "\n")


def plain(doc):
    doc["model"]["modules"].append(
        {"name": "plain", "nodes": [{"op": "arg", "shape": [8]},
                                    {"op": "relu", "inputs": [0]}],
         "outputs": [1]})
    doc["instances"][1]["nodes"][1]["experts"] = "plain"


def narrow_gate(doc):
    for p in doc["model"]["params"]:
        if p["name"] == "W_gate":
            p["shape"] = [4, 4]


moe_variant("top", lambda d: d["instances"][1]["nodes"][1].update(top=5))
moe_variant("plain", plain)
moe_variant("gate", narrow_gate)
