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


# Compile budgets: modules whose one kernel would take LLVM minutes.
def doc(modules, instances, extra_params=()):
    return {"dynb": 1,
            "model": {"params": [{"name": "E", "shape": [6, 4]}] + list(extra_params),
                      "modules": modules},
            "instances": instances}


def concat_of_args(k):
    """A module concatenating its k arguments (gathered straight into the
    windows of the concat) and one concatenating k values it computes."""
    args = {"name": "wide_args",
            "nodes": [{"op": "arg", "shape": [4]} for _ in range(k)] +
                     [{"op": "concat", "inputs": list(range(k))},
                      {"op": "linear", "inputs": [k], "weight": "Wc"}],
            "outputs": [k + 1]}
    computed = [{"op": "arg", "shape": [4]}]
    for i in range(k):
        computed.append({"op": ["tanh", "sigmoid", "relu"][i % 3], "inputs": [i]})
    computed += [{"op": "concat", "inputs": list(range(1, k + 1))},
                 {"op": "linear", "inputs": [k + 1], "weight": "Wc"}]
    mixed = {"name": "wide_mixed", "nodes": computed, "outputs": [k + 2]}
    instances = []
    for t in range(3):
        nodes = [{"op": "embedding", "table": "E", "index": (t + i) % 6}
                 for i in range(k)]
        nodes.append({"op": "call", "module": "wide_args", "inputs": list(range(k))})
        nodes.append({"op": "call", "module": "wide_mixed", "inputs": [t]})
        instances.append({"nodes": nodes, "outputs": [k, k + 1]})
    return doc([args, mixed], instances, [{"name": "Wc", "shape": [4, 4 * k]}])


def chain(n):
    """A module of n nodes: an argument, then n - 1 elementwise ops."""
    nodes = [{"op": "arg", "shape": [4]}] + [
        {"op": "tanh", "inputs": [i]} for i in range(n - 1)]
    module = {"name": "long", "nodes": nodes, "outputs": [n - 1]}
    instances = [{"nodes": [{"op": "embedding", "table": "E", "index": 1},
                            {"op": "call", "module": "long", "inputs": [0]}],
                  "outputs": [1]}]
    return doc([module], instances)


write("concat20.json", json.dumps(concat_of_args(20)))
write("concat300.json", json.dumps(concat_of_args(300)))
wide_instance = doc([], [{"nodes": [{"op": "embedding", "table": "E", "index": 1},
                                     {"op": "concat", "inputs": [0] * 300}],
                           "outputs": [1]}])
write("instance-concat300.json", json.dumps(wide_instance))
write("chain1000.json", json.dumps(chain(1000)))
write("chain1001.json", json.dumps(chain(1001)))

# The same budgets on the dialect's own form.

write("concat300.mlir", "\n".join([
    "dynb.param @E : tensor<6x4xf32>",
    "dynb.instance {",
    "  %e = dynb.embedding @E [1] : tensor<4xf32>",
    "  %c = dynb.concat " + ", ".join(["%e"] * 300) + " : (" +
    ", ".join(["tensor<4xf32>"] * 300) + ") -> tensor<1200xf32>",
    "  dynb.output %c : tensor<1200xf32>",
    "}", ""]))
body = ["func.func @long(%v0: tensor<4xf32>) -> tensor<4xf32> {"]
for i in range(1, 1002):
    body.append("  %%v%d = dynb.tanh %%v%d : tensor<4xf32>" % (i, i - 1))
body += ["  return %v1001 : tensor<4xf32>", "}"]
write("chain1001.mlir", "\n".join(body) + "\n")
