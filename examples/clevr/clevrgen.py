#!/usr/bin/env python3
"""Synthetic CLEVR questions and image features for the IEP module network.

Writes a CLEVR question file ({"questions": [{"question_index", "image_index",
"template_family", "program": [{"function", "value_inputs", "inputs"}, ...]}]},
nodes in topological order, root last) with programs drawn evenly from CLEVR's
nine template families and their node ranges (docs/workloads.md section 2), and,
with --features, random image features as a safetensors file holding one F32
tensor 'features' [images, C, H, W] (standard normal; C, H, W default 1024,
14, 14: ResNet-101 cut after its third stage). Seeded: the same arguments give
the same files. Python 3 standard library; numpy, when present, makes
--features faster (the values then differ from the stdlib ones).
"""
import argparse
import array
import json
import random
import struct
import sys

COLORS = ["gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"]
SHAPES = ["cube", "sphere", "cylinder"]
SIZES = ["small", "large"]
MATERIALS = ["rubber", "metal"]
ATTRS = {"color": COLORS, "shape": SHAPES, "size": SIZES, "material": MATERIALS}
RELATIONS = ["left", "right", "behind", "front"]

# family: (min nodes, max nodes), as docs/workloads.md gives them.
FAMILIES = {
    "zero_hop": (2, 7),
    "one_hop": (4, 13),
    "two_hop": (6, 19),
    "three_hop": (8, 25),
    "same_relate": (4, 13),
    "single_and": (8, 21),
    "single_or": (6, 24),
    "compare_integer": (5, 25),
    "comparison": (7, 27),
}


class Program:
    """A program under construction: nodes in topological order."""

    def __init__(self):
        self.nodes = []

    def add(self, function, inputs, value=None):
        self.nodes.append({
            "function": function,
            "value_inputs": [] if value is None else [value],
            "inputs": list(inputs),
        })
        return len(self.nodes) - 1


def filters(rng, p, x, lo, hi):
    """lo..hi filters on distinct attributes, applied to node x."""
    for attr in rng.sample(sorted(ATTRS), rng.randint(lo, hi)):
        x = p.add("filter_" + attr, [x], rng.choice(ATTRS[attr]))
    return x


def filter_unique(rng, p, x):
    # CLEVR's filter_unique: 1-4 filters, then unique.
    return p.add("unique", [filters(rng, p, x, 1, 4)])


def final(rng, p, x):
    """The answer of a chain: count or exist after 0-4 filters, or a query
    of one object."""
    kind = rng.choice(["count", "exist", "query"])
    if kind == "query":
        obj = filter_unique(rng, p, x)
        return p.add("query_" + rng.choice(sorted(ATTRS)), [obj])
    return p.add(kind, [filters(rng, p, x, 0, 4)])


def hops(rng, p, n):
    x = p.add("scene", [])
    for _ in range(n):
        x = p.add("relate", [filter_unique(rng, p, x)], rng.choice(RELATIONS))
    return x


def branch_set(rng, p):
    """The objects related to one object: scene, filter_unique, relate."""
    x = p.add("scene", [])
    return p.add("relate", [filter_unique(rng, p, x)], rng.choice(RELATIONS))


def generate(rng, family):
    p = Program()
    if family in ("zero_hop", "one_hop", "two_hop", "three_hop"):
        n = ["zero_hop", "one_hop", "two_hop", "three_hop"].index(family)
        final(rng, p, hops(rng, p, n))
    elif family == "same_relate":
        obj = filter_unique(rng, p, p.add("scene", []))
        final(rng, p, p.add("same_" + rng.choice(sorted(ATTRS)), [obj]))
    elif family in ("single_and", "single_or"):
        a = branch_set(rng, p)
        b = branch_set(rng, p)
        j = p.add("intersect" if family == "single_and" else "union", [a, b])
        p.add(rng.choice(["count", "exist"]), [filters(rng, p, j, 0, 4)])
    elif family == "compare_integer":
        counts = []
        for _ in range(2):
            x = branch_set(rng, p) if rng.random() < 0.5 else p.add("scene", [])
            counts.append(p.add("count", [filters(rng, p, x, 0, 4)]))
        p.add(rng.choice(["equal_integer", "less_than", "greater_than"]), counts)
    elif family == "comparison":
        attr = rng.choice(sorted(ATTRS))
        objs = []
        for _ in range(2):
            x = branch_set(rng, p) if rng.random() < 0.5 else p.add("scene", [])
            objs.append(p.add("query_" + attr, [filter_unique(rng, p, x)]))
        p.add("equal_" + attr, objs)
    else:
        raise ValueError(family)
    return p.nodes


def depth(nodes):
    d = []
    for n in nodes:
        d.append(1 + max((d[i] for i in n["inputs"]), default=0))
    return d[-1]


def questions(count, seed, images, families):
    rng = random.Random(seed)
    out = []
    for q in range(count):
        family = families[q % len(families)]  # sampled evenly
        lo, hi = FAMILIES[family]
        while True:
            nodes = generate(rng, family)
            if lo <= len(nodes) <= hi:
                break
        out.append({
            "question_index": q,
            "image_index": rng.randrange(images),
            "template_family": family,
            "program": nodes,
        })
    return out


def write_questions(path, qs):
    # One question a line, so that errors' line numbers name a question.
    with open(path, "w") as f:
        f.write('{"info": {"generator": "dynb clevrgen.py"},\n "questions": [\n')
        for i, q in enumerate(qs):
            f.write("  " + json.dumps(q, separators=(",", ":")))
            f.write(",\n" if i + 1 < len(qs) else "\n")
        f.write("]}\n")


def write_features(path, images, channels, size, seed):
    shape = [images, channels, size, size]
    count = images * channels * size * size
    try:
        import numpy as np

        rng = np.random.default_rng(seed)
        data = rng.standard_normal(count, dtype=np.float32).tobytes()
    except ImportError:  # the standard library alone: slower, same format
        rng = random.Random(seed)
        data = array.array("f", (rng.gauss(0.0, 1.0) for _ in range(count)))
        if sys.byteorder != "little":
            data.byteswap()
        data = data.tobytes()
    header = {"features": {"dtype": "F32", "shape": shape,
                           "data_offsets": [0, len(data)]}}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", required=True, help="questions .json")
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--images", type=int, default=0,
                    help="distinct images (default: one a question)")
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES),
                    help="only these families (default: all nine, evenly)")
    ap.add_argument("--features", help="also write features .safetensors")
    ap.add_argument("--feature-dim", type=int, default=1024)
    ap.add_argument("--map-size", type=int, default=14)
    ap.add_argument("--stats", action="store_true",
                    help="print nodes and depth per family to stderr")
    a = ap.parse_args()
    if a.questions < 1:
        ap.error("--questions must be at least 1")
    images = a.images or a.questions
    families = a.family or list(FAMILIES)
    qs = questions(a.questions, a.seed, images, families)
    write_questions(a.output, qs)
    if a.features:
        write_features(a.features, images, a.feature_dim, a.map_size, a.seed)
    if a.stats:
        for fam in families:
            sizes = [len(q["program"]) for q in qs if q["template_family"] == fam]
            depths = [depth(q["program"]) for q in qs if q["template_family"] == fam]
            if sizes:
                print(f"{fam}: {len(sizes)} programs, nodes {min(sizes)}-{max(sizes)}, "
                      f"depth {min(depths)}-{max(depths)}", file=sys.stderr)


if __name__ == "__main__":
    main()
