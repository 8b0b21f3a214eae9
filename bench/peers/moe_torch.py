#!/usr/bin/env python3
# PyTorch peers for the mixture-of-experts benchmark: dynb's layer and weights, run the two ways users write it.
"""Usage:
  moe_torch.py params OUT.safetensors --tokens T --experts E --d D --hidden H
                [--seed N]
      writes seeded inputs and weights (X, W_gate, W1, b1, W2, b2; the names
      and shapes of examples/moe/moegen.py) for dynbc --params and the peers
  moe_torch.py run PARAMS.safetensors --k K --mode eager|grouped
                [--repeat N] [--threads N] [--check DYNB.npy]
      runs the layer over every token in PyTorch and prints one JSON object:
      seconds of each timed pass (after a warm-up pass), tokens/s of the
      median, and with --check the largest difference from dynb's outputs
      (dynbc run --output, one row a token)

Modes: 'eager' is the seed paper's vanillaExperts: the gate for one token,
then one 1-row call per chosen expert; 'grouped' is how MoE layers are
batched by hand: one gate GEMM for all tokens, torch.topk, then per used
expert one index_select, its two linears on all its tokens, and an
index_add_ of the gate-weighted rows back in token order. Noise is off (as
in dynb's benchmark). Ties in the gate go to the lower expert index in dynb;
torch.topk does not promise that, so inputs with tied logits may differ
(seeded random weights have none).
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from safetensors_io import read_safetensors, write_safetensors


def make_params(tokens, experts, d, hidden, seed):
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        b = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-b, b, size=shape).astype(np.float32)

    return {"X": rng.standard_normal((tokens, d), dtype=np.float32),
            "W_gate": uniform((experts, d), d),
            "W1": uniform((experts, hidden, d), d), "b1": uniform((experts, hidden), d),
            "W2": uniform((experts, d, hidden), hidden), "b2": uniform((experts, d), hidden)}


class Moe:
    def __init__(self, torch, params, k):
        self.t, self.F, self.k = torch, torch.nn.functional, k
        p = {n: torch.from_numpy(np.array(v)) for n, v in params.items()}
        self.X, self.Wg = p["X"], p["W_gate"]
        self.W1, self.b1, self.W2, self.b2 = p["W1"], p["b1"], p["W2"], p["b2"]

    def expert(self, e, x):
        F = self.F
        return F.linear(F.relu(F.linear(x, self.W1[e], self.b1[e])), self.W2[e], self.b2[e])

    def eager(self):
        t, F = self.t, self.F
        rows = []
        for i in range(self.X.shape[0]):
            x = self.X[i:i + 1]
            top, idx = t.topk(F.linear(x, self.Wg), self.k, dim=1)
            g = t.softmax(top, dim=1)
            y = None
            for j in range(self.k):
                out = g[0, j] * self.expert(int(idx[0, j]), x)
                y = out if y is None else y + out
            rows.append(y)
        return t.cat(rows)

    def grouped(self):
        t, F = self.t, self.F
        top, idx = t.topk(F.linear(self.X, self.Wg), self.k, dim=1)
        g = t.softmax(top, dim=1)
        y = t.zeros(self.X.shape[0], self.W2.shape[1])
        flat = idx.reshape(-1)
        order = t.argsort(flat, stable=True)
        counts = t.bincount(flat, minlength=self.Wg.shape[0]).tolist()
        tokens = order // self.k
        weights = g.reshape(-1)[order]
        start = 0
        for e, n in enumerate(counts):
            if n == 0:
                continue
            tok = tokens[start:start + n]
            out = self.expert(e, self.X.index_select(0, tok))
            y.index_add_(0, tok, out * weights[start:start + n, None])
            start += n
        return y


def run(args):
    import torch
    # dynb uses every hardware thread by default (OpenMP); so do the peers.
    torch.set_num_threads(args.threads or os.cpu_count())
    model = Moe(torch, read_safetensors(args.params), args.k)
    forward = model.eager if args.mode == "eager" else model.grouped
    with torch.no_grad():
        out = forward().numpy()
        seconds = []
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            forward()
            seconds.append(time.perf_counter() - start)
    med = statistics.median(seconds)
    tokens = out.shape[0]
    result = {"peer": "pytorch-" + args.mode, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "tokens": tokens, "seconds": seconds,
              "median_seconds": med, "tokens_per_second": tokens / med}
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
    p = argparse.ArgumentParser(prog="moe_torch.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("params")
    pp.add_argument("out")
    for name in ("tokens", "experts", "d", "hidden"):
        pp.add_argument("--" + name, type=int, required=True)
    pp.add_argument("--seed", type=int, default=1)
    pr = sub.add_parser("run")
    pr.add_argument("params")
    pr.add_argument("--k", type=int, required=True)
    pr.add_argument("--mode", choices=("eager", "grouped"), required=True)
    pr.add_argument("--repeat", type=int, default=3)
    pr.add_argument("--threads", type=int, default=0)
    pr.add_argument("--check", metavar="DYNB.npy")
    pr.add_argument("--atol", type=float, default=1e-3)
    args = p.parse_args(argv)
    if args.cmd == "params":
        write_safetensors(args.out, make_params(args.tokens, args.experts, args.d,
                                                args.hidden, args.seed))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
