"""Writes broken variants of a good interchange file for the error tests."""
import copy
import json
import os
import sys

src, out = sys.argv[1], sys.argv[2]
good = json.load(open(src))


def write(name, doc):
    with open(os.path.join(out, name), "w") as f:
        json.dump(doc, f)


d = copy.deepcopy(good)
d["instances"][0]["nodes"][1]["module"] = "nope"
write("unknown-module.json", d)

d = copy.deepcopy(good)
d["instances"][0]["nodes"][1]["inputs"] = [4]
write("forward-ref.json", d)

d = copy.deepcopy(good)
d["model"]["modules"][0]["nodes"][1]["weight"] = "Q"
write("unknown-param.json", d)

d = copy.deepcopy(good)
d["model"]["params"].append({"name": "F", "shape": [6, 8]})
d["instances"][0]["nodes"][0] = {"op": "embedding", "table": "F", "index": 1}
write("shape-mismatch.json", d)

d = copy.deepcopy(good)
d["instances"][1]["nodes"][2]["op"] = "softmax"
write("unknown-op.json", d)

d = copy.deepcopy(good)
d["dynb"] = 7
write("bad-version.json", d)

with open(os.path.join(out, "truncated.json"), "w") as f:
    f.write(json.dumps(good)[:-40])

with open(os.path.join(out, "bad-line.jsonl"), "w") as f:
    f.write(json.dumps({"dynb": 1, "model": good["model"]}) + "\n")
    f.write(json.dumps(good["instances"][0]) + "\n")
    bad = copy.deepcopy(good["instances"][1])
    bad["nodes"][0]["index"] = 9
    f.write(json.dumps(bad) + "\n")

d = copy.deepcopy(good)
d["instances"][1]["outputs"] = [0]
d["instances"][1]["nodes"][0] = {"op": "embedding", "table": "E", "index": 5}
d["model"]["params"][0]["shape"] = [6, 4]
d["instances"][1] = {"nodes": [{"op": "embedding", "table": "E", "index": 5},
                               {"op": "concat", "inputs": [0, 0]}],
                     "outputs": [1]}
write("mixed-outputs.json", d)

# Hostile inputs (reliability): references that dangle, names given twice,
# sizes that overflow or ask for terabytes, names that are not UTF-8.
d = copy.deepcopy(good)
d["instances"][0]["nodes"][1]["inputs"] = [99]
write("dangling-node.json", d)

d = copy.deepcopy(good)
d["instances"][0]["nodes"][1]["inputs"] = [[0, 5]]
write("dangling-result.json", d)

d = copy.deepcopy(good)
d["instances"][0]["nodes"][1]["inputs"] = [-1]
write("negative-ref.json", d)

d = copy.deepcopy(good)
d["instances"][0]["outputs"] = [17]
write("dangling-output.json", d)

d = copy.deepcopy(good)
d["model"]["params"].append({"name": "W", "shape": [4, 4]})
write("duplicate-param.json", d)

d = copy.deepcopy(good)
d["model"]["modules"].append(copy.deepcopy(d["model"]["modules"][0]))
write("duplicate-module.json", d)

d = copy.deepcopy(good)
d["model"]["params"][1]["shape"] = [1 << 40, 1 << 40]
write("overflow-shape.json", d)

d = copy.deepcopy(good)
d["model"]["params"].append({"name": "Huge", "shape": [1 << 17, 1 << 17]})
write("terabyte-param.json", d)

d = copy.deepcopy(good)
d["model"]["params"][1]["shape"] = [4, 0]
write("zero-dim.json", d)

# Invalid UTF-8 in a module name: bytes, not text.
raw = json.dumps(good).encode().replace(b'"node"', b'"no\xffde"')
with open(os.path.join(out, "non-utf8.json"), "wb") as f:
    f.write(raw)
