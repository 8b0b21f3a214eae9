"""Writes broken mixture-of-experts interchange files for moe-json.test."""
import copy
import json
import os
import sys

GOOD = {
    "dynb": 1,
    "model": {
        "params": [{"name": "X", "shape": [2, 8]}, {"name": "W_gate", "shape": [4, 8]},
                   {"name": "W1", "shape": [4, 8, 8]}, {"name": "b1", "shape": [4, 8]}],
        "modules": [{"name": "expert", "experts": 4,
                     "nodes": [{"op": "arg", "shape": [8]},
                               {"op": "linear", "inputs": [0], "weight": "W1", "bias": "b1"}],
                     "outputs": [1]}],
    },
    "instances": [{"nodes": [{"op": "embedding", "table": "X", "index": t},
                             {"op": "dispatch", "inputs": [0], "gate": "W_gate",
                              "experts": "expert", "top": 1}],
                   "outputs": [1]} for t in range(2)],
}


def variant(name, change):
    doc = copy.deepcopy(GOOD)
    change(doc)
    with open(os.path.join(sys.argv[1], name + ".json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))


def params(doc):
    return {p["name"]: p for p in doc["model"]["params"]}


if __name__ == "__main__":
    variant("top", lambda d: d["instances"][0]["nodes"][1].update(top=5))
    variant("flat", lambda d: params(d)["W1"].update(shape=[8, 8]))
    variant("unmarked", lambda d: d["model"]["modules"][0].pop("experts"))
    variant("count", lambda d: d["model"]["modules"][0].update(experts=0))
    variant("nomodule", lambda d: d["instances"][0]["nodes"][1].update(experts="nobody"))
    variant("rank4", lambda d: params(d)["W1"].update(shape=[4, 8, 8, 1]))
    variant("inmodule", lambda d: d["model"]["modules"].append(
        {"name": "wrapper", "nodes": [{"op": "arg", "shape": [8]},
                                      {"op": "dispatch", "inputs": [0], "gate": "W_gate",
                                       "experts": "expert", "top": 1}],
         "outputs": [1]}))
