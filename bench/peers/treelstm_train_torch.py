#!/usr/bin/env python3
# PyTorch peers for the training benchmark: dynb's trees, labels and weights, trained the two ways users write it.
"""Usage:
  treelstm_train_torch.py GRAPHS PARAMS.safetensors --mode eager|level
                          [--batch N] [--lr X] [--shuffle-seed S] [--epoch E]
                          [--threads N]
      trains the TreeLSTM of GRAPHS (sst2dynb --labels: a classifier and a
      softmax cross-entropy on every node) for one epoch with Adam and
      prints one JSON object: the epoch's summed loss, its seconds (forward,
      backward and optimizer steps apart) and trees/s

The epoch visits the trees in the order `dynbc train --shuffle-seed S`
gives epoch E, and steps once per --batch trees on the gradient of their
summed loss, as dynbc train does, so from the same weights the two print
the same epoch loss (to float rounding). 'eager' runs one tree at a time,
node by node, with a backward pass per tree (gradients summed over the
batch); 'level' batches by hand: the batch's nodes grouped by height, one
set of matrix products a height, one classifier product and one backward
pass for the batch.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_safetensors  # noqa: E402
from treelstm_torch import TreeLstm, level_plan, read_graphs  # noqa: E402

MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def dynbc_order(n, seed, epoch):
    """The order dynbc train visits n instances in epoch `epoch`."""
    order = list(range(n))
    state = (seed * 0x100000001B3 + epoch) & MASK
    for i in range(n, 1, -1):
        state, r = splitmix64(state)
        j = r % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def read_labelled(path):
    """Per instance, its tree (read_graphs': post-order, (word,) or (left,
    right)) and each tree node's sentiment label."""
    _, trees = read_graphs(path)
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    out = []
    for tree, inst in zip(trees, lines[1:]):
        nodes = inst["nodes"]
        # Tree nodes are the calls, in order; a label's softmax_xent reads
        # a linear of its call's h.
        tree_of = {i: k for k, i in enumerate(
            i for i, n in enumerate(nodes) if n["op"] == "call")}
        labels = {}
        for n in nodes:
            if n["op"] == "softmax_xent":
                h = nodes[n["inputs"][0]]["inputs"][0]
                labels[tree_of[h[0] if isinstance(h, list) else h]] = n["label"]
        if len(labels) != len(tree):
            raise SystemExit("%s: not every tree node has a label (sst2dynb --labels)" % path)
        out.append((tree, [labels[k] for k in range(len(tree))]))
    return out


def main(argv):
    p = argparse.ArgumentParser(prog="treelstm_train_torch.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graphs")
    p.add_argument("params")
    p.add_argument("--mode", choices=("eager", "level"), required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--shuffle-seed", type=int, default=1)
    p.add_argument("--epoch", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)

    import torch
    F = torch.nn.functional
    torch.set_num_threads(args.threads or os.cpu_count())
    weights = read_safetensors(args.params)
    model = TreeLstm(torch, weights)
    params = {k: getattr(model, k) for k in
              ("E", "W_iou", "b_iou", "U_iou", "U_f1", "U_f2", "b_f")}
    W_s = torch.from_numpy(np.array(weights["W_s"]))
    b_s = torch.from_numpy(np.array(weights["b_s"]))
    params.update(W_s=W_s, b_s=b_s)
    for t in params.values():
        t.requires_grad_(True)
    opt = torch.optim.Adam(list(params.values()), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    trees = read_labelled(args.graphs)
    order = dynbc_order(len(trees), args.shuffle_seed, args.epoch)
    batches = [[trees[i] for i in order[s:s + args.batch]]
               for s in range(0, len(order), args.batch)]
    plans = ([level_plan(torch, [t for t, _ in b]) for b in batches]
             if args.mode == "level" else None)
    level_labels = ([torch.tensor([l for _, ls in b for l in ls], dtype=torch.long)
                     for b in batches] if args.mode == "level" else None)

    def tree_loss(tree, labels):
        hs, cs = [], []
        for node in tree:
            if len(node) == 1:
                h, c = model.leaves(model.E[node[0]:node[0] + 1])
            else:
                l, r = node
                h, c = model.internals(hs[l], cs[l], hs[r], cs[r])
            hs.append(h)
            cs.append(c)
        logits = [F.linear(h, W_s, b_s) for h in hs]
        return sum(F.cross_entropy(z, torch.tensor([y]), reduction="sum")
                   for z, y in zip(logits, labels))

    def level_loss(k):
        plan = plans[k]
        H = torch.zeros(plan["total"], model.h)
        C = torch.zeros(plan["total"], model.h)
        for lvl, group in enumerate(plan["levels"]):
            if lvl == 0:
                h, c = model.leaves(model.E.index_select(0, group["words"]))
            else:
                left, right = group["left"], group["right"]
                h, c = model.internals(H.index_select(0, left), C.index_select(0, left),
                                       H.index_select(0, right), C.index_select(0, right))
            H = H.index_copy(0, group["ids"], h)
            C = C.index_copy(0, group["ids"], c)
        return F.cross_entropy(F.linear(H, W_s, b_s), level_labels[k], reduction="sum")

    fwd = bwd = upd = 0.0
    total = 0.0

    def forward_backward(loss_fn):
        nonlocal fwd, bwd, total
        t0 = time.perf_counter()
        loss = loss_fn()
        t1 = time.perf_counter()
        loss.backward()
        fwd += t1 - t0
        bwd += time.perf_counter() - t1
        total += float(loss)

    start = time.perf_counter()
    for k, batch in enumerate(batches):
        opt.zero_grad(set_to_none=False)
        if args.mode == "eager":
            for tree, labels in batch:
                forward_backward(lambda: tree_loss(tree, labels))
        else:
            forward_backward(lambda: level_loss(k))
        t2 = time.perf_counter()
        opt.step()
        upd += time.perf_counter() - t2
    seconds = time.perf_counter() - start
    print(json.dumps({"peer": "pytorch-" + args.mode, "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "trees": len(trees),
                      "batch": args.batch, "epoch_loss": total, "seconds": seconds,
                      "forward_seconds": fwd, "backward_seconds": bwd,
                      "update_seconds": upd, "trees_per_second": len(trees) / seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
