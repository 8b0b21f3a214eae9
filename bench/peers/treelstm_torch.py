#!/usr/bin/env python3
# PyTorch peers for the TreeLSTM benchmark: dynb's own trees and weights, run the two ways users write it.
"""Usage:
  treelstm_torch.py params GRAPHS OUT.safetensors [--seed N]
      writes seeded weights for the model in GRAPHS (dynb interchange, .json
      or .jsonl) as safetensors, for dynbc --params and for the peers
  treelstm_torch.py run GRAPHS PARAMS.safetensors --mode eager|level
                    [--batch N] [--repeat N] [--threads N] [--check DYNB.npy]
      runs the TreeLSTM over every instance of GRAPHS in PyTorch and prints
      one JSON object: seconds of each timed pass (after a warm-up pass),
      trees/s of the median, and with --check the largest difference from
      dynb's outputs (dynbc run --output, one row an instance)

Modes: 'eager' is one tree at a time, one node at a time (how the original
TreeLSTM and clevr-iep code run); 'level' batches by hand: the batch's nodes
are grouped by height (leaves 0, a parent one above its higher child) and
every group runs as one set of matrix products, with index_select gathers.
The model is sst2dynb's: leaf(x) and internal(h1, c1, h2, c2) (see
examples/treelstm/README.md); weights are [out, in] as in dynb.linear.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from safetensors_io import read_safetensors, write_safetensors


def read_graphs(path):
    """The model's parameter shapes and, per instance, its tree in post-order:
    (word,) for a leaf, (left, right) for an internal node (indices into the
    instance's tree), the root last."""
    with open(path) as f:
        if path.endswith(".jsonl"):
            lines = [json.loads(l) for l in f if l.strip()]
            model, instances = lines[0]["model"], lines[1:]
        else:
            doc = json.load(f)
            model, instances = doc["model"], doc["instances"]
    shapes = {p["name"]: p["shape"] for p in model["params"]}
    trees = []
    for inst in instances:
        tree, tree_of = [], {}
        nodes = inst["nodes"]
        for i, n in enumerate(nodes):
            if n["op"] != "call":
                continue
            refs = [r[0] if isinstance(r, list) else r for r in n["inputs"]]
            if n["module"] == "leaf":
                emb = nodes[refs[0]]
                tree_of[i] = len(tree)
                tree.append((emb["index"],))
            else:
                tree_of[i] = len(tree)
                tree.append((tree_of[refs[0]], tree_of[refs[2]]))
        out = inst["outputs"][0]
        root = out[0] if isinstance(out, list) else out
        if tree_of.get(root) != len(tree) - 1:
            raise SystemExit("%s: an instance's output is not its last call" % path)
        trees.append(tree)
    return shapes, trees


def make_params(shapes, seed):
    rng = np.random.default_rng(seed)
    params = {}
    for name in sorted(shapes):
        shape = shapes[name]
        bound = 1.0 / np.sqrt(shape[-1])
        params[name] = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return params


class TreeLstm:
    def __init__(self, torch, params):
        self.t = torch
        self.F = torch.nn.functional
        p = {k: torch.from_numpy(np.array(v)) for k, v in params.items()}
        self.E, self.W_iou, self.b_iou = p["E"], p["W_iou"], p["b_iou"]
        self.U_iou, self.U_f1, self.U_f2, self.b_f = p["U_iou"], p["U_f1"], p["U_f2"], p["b_f"]
        self.h = self.U_f1.shape[0]

    def cell(self, iou, fc):
        """iou: [n, 3h]; fc: the forget-gated memory (or None for leaves)."""
        t, h = self.t, self.h
        i = t.sigmoid(iou[:, :h])
        o = t.sigmoid(iou[:, h:2 * h])
        u = t.tanh(iou[:, 2 * h:])
        c = i * u if fc is None else i * u + fc
        return o * t.tanh(c), c

    def leaves(self, x):
        return self.cell(self.F.linear(x, self.W_iou, self.b_iou), None)

    def internals(self, h1, c1, h2, c2):
        F, t = self.F, self.t
        iou = F.linear(t.cat([h1, h2], dim=1), self.U_iou, self.b_iou)
        f1 = t.sigmoid(F.linear(h1, self.U_f1, self.b_f))
        f2 = t.sigmoid(F.linear(h2, self.U_f2, self.b_f))
        return self.cell(iou, f1 * c1 + f2 * c2)

    def eager(self, tree):
        """One tree, one node at a time: the root's h, [1, h]."""
        hs, cs = [], []
        for node in tree:
            if len(node) == 1:
                h, c = self.leaves(self.E[node[0]:node[0] + 1])
            else:
                l, r = node
                h, c = self.internals(hs[l], cs[l], hs[r], cs[r])
            hs.append(h)
            cs.append(c)
        return hs[-1]

    def level(self, trees, plan):
        """A batch of trees, one launch set a height: the roots' h, [n, h]."""
        t = self.t
        H = t.empty(plan["total"], self.h)
        C = t.empty(plan["total"], self.h)
        for lvl, group in enumerate(plan["levels"]):
            if lvl == 0:
                h, c = self.leaves(self.E.index_select(0, group["words"]))
            else:
                left, right = group["left"], group["right"]
                h, c = self.internals(H.index_select(0, left), C.index_select(0, left),
                                      H.index_select(0, right), C.index_select(0, right))
            H.index_copy_(0, group["ids"], h)
            C.index_copy_(0, group["ids"], c)
        return H.index_select(0, plan["roots"])


def level_plan(torch, trees):
    """Heights and gather indices of a batch, built once (not timed: a user
    would build them while reading the batch)."""
    levels, base, roots = {}, 0, []
    for tree in trees:
        height = []
        for k, node in enumerate(tree):
            if len(node) == 1:
                height.append(0)
                levels.setdefault(0, {"ids": [], "words": []})
                levels[0]["ids"].append(base + k)
                levels[0]["words"].append(node[0])
            else:
                l, r = node
                lv = 1 + max(height[l], height[r])
                height.append(lv)
                g = levels.setdefault(lv, {"ids": [], "left": [], "right": []})
                g["ids"].append(base + k)
                g["left"].append(base + l)
                g["right"].append(base + r)
        roots.append(base + len(tree) - 1)
        base += len(tree)
    ordered = []
    for lv in range(max(levels) + 1):
        ordered.append({k: torch.tensor(v, dtype=torch.long) for k, v in levels[lv].items()})
    return {"total": base, "levels": ordered, "roots": torch.tensor(roots, dtype=torch.long)}


def run(args):
    import torch
    # dynb uses every hardware thread by default (OpenMP); so do the peers.
    torch.set_num_threads(args.threads or os.cpu_count())
    shapes, trees = read_graphs(args.graphs)
    model = TreeLstm(torch, read_safetensors(args.params))
    batch = args.batch or len(trees)
    batches = [trees[i:i + batch] for i in range(0, len(trees), batch)]
    plans = [level_plan(torch, b) for b in batches] if args.mode == "level" else None

    def one_pass():
        outs = []
        with torch.no_grad():
            if args.mode == "eager":
                for tree in trees:
                    outs.append(model.eager(tree))
            else:
                for b, plan in zip(batches, plans):
                    outs.append(model.level(b, plan))
        return torch.cat(outs).numpy()

    out = one_pass()  # warm-up, and the outputs checked
    seconds = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        one_pass()
        seconds.append(time.perf_counter() - start)
    med = statistics.median(seconds)
    result = {"peer": "pytorch-" + args.mode, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "trees": len(trees),
              "batch": batch if args.mode == "level" else 1,
              "seconds": seconds, "median_seconds": med,
              "trees_per_second": len(trees) / med}
    if args.check:
        ref = np.load(args.check)
        if ref.shape != out.shape:
            raise SystemExit("outputs are %s, dynb's %s" % (out.shape, ref.shape))
        err = float(np.max(np.abs(ref - out)))
        result["max_abs_error"] = err
        result["check"] = "ok" if err <= args.atol else "FAIL"
    print(json.dumps(result))
    return 0 if result.get("check", "ok") == "ok" else 1


def main(argv):
    p = argparse.ArgumentParser(prog="treelstm_torch.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("params")
    pp.add_argument("graphs")
    pp.add_argument("out")
    pp.add_argument("--seed", type=int, default=1)
    pr = sub.add_parser("run")
    pr.add_argument("graphs")
    pr.add_argument("params")
    pr.add_argument("--mode", choices=("eager", "level"), required=True)
    pr.add_argument("--batch", type=int, default=0)
    pr.add_argument("--repeat", type=int, default=3)
    pr.add_argument("--threads", type=int, default=0)
    pr.add_argument("--check", metavar="DYNB.npy")
    pr.add_argument("--atol", type=float, default=1e-3)
    args = p.parse_args(argv)
    if args.cmd == "params":
        shapes, _ = read_graphs(args.graphs)
        write_safetensors(args.out, make_params(shapes, args.seed))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
