#!/usr/bin/env python3
"""Writes a sparsely gated mixture-of-experts batch (docs/workloads.md section 3).

usage: moegen.py --tokens T --experts E [--k K] [--d D] [--hidden H]
                 [--out-dim O] [--noise] [--noise-seed N] -o MODEL
                 [--params P.safetensors [--seed S] [--gate random|zero|ties|hot]]

MODEL holds the layer and one instance per token: the token is row t of the
parameter X, the layer is one dispatch to the expert module 'expert'
(Linear, ReLU, Linear with biases). MODEL ending in .json is written as an
interchange document, in .jsonl as interchange JSON Lines (which `dynbc run
--stream` reads a batch at a time), anything else as dynb dialect IR
(.mlir); the three describe the same computation. Parameters, by these names (also
in a safetensors file, F32, row-major, each expert's matrices in PyTorch's
nn.Linear.weight layout):

  X        [T, D]     the tokens
  W_gate   [E, D]     gate: H(x)_i = (W_gate x)_i (+ noise)
  W_noise  [E, D]     with --noise: N(0,1) * softplus((W_noise x)_i)
  W1       [E, H, D]  expert i's first Linear weight is W1[i]
  b1       [E, H]
  W2       [E, O, H]
  b2       [E, O]

Without --params, run with `dynbc run MODEL.mlir --seed N` (seeded in dynbc,
fast at any size). --params writes seeded values from Python's generator
(small sizes: tests), with a gate to make routing cases on purpose:
  random  uniform in +-1/sqrt(D)
  zero    W_gate = 0: every logit ties, the top k are experts 0..k-1
  ties    W_gate rows in equal pairs (2i, 2i+1), values and X multiples of
          1/4: every dot product is exact in any order, so ties are exact
  hot     only row E//2 of W_gate is non-zero and X > 0: every token picks
          expert E//2 first (one expert gets every token)
"""
import argparse
import json
import random
import struct
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, required=True)
    p.add_argument("--experts", type=int, required=True)
    p.add_argument("--k", type=int, default=1)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--out-dim", type=int, default=None,
                   help="expert output width (default: --d)")
    p.add_argument("--noise", action="store_true",
                   help="noisy gating (W_noise); off by default")
    p.add_argument("--noise-seed", type=int, default=0)
    p.add_argument("-o", dest="out", required=True)
    p.add_argument("--params", help="also write seeded parameters here")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gate", choices=["random", "zero", "ties", "hot"],
                   default="random")
    a = p.parse_args()
    if a.out_dim is None:
        a.out_dim = a.d
    for name in ("tokens", "experts", "k", "d", "hidden", "out_dim"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.k > a.experts:
        p.error("--k %d exceeds --experts %d" % (a.k, a.experts))
    return a


def shapes(a):
    s = {"X": [a.tokens, a.d], "W_gate": [a.experts, a.d]}
    if a.noise:
        s["W_noise"] = [a.experts, a.d]
    s.update({"W1": [a.experts, a.hidden, a.d], "b1": [a.experts, a.hidden],
              "W2": [a.experts, a.out_dim, a.hidden],
              "b2": [a.experts, a.out_dim]})
    return s


def tensor_type(shape):
    return "tensor<%sxf32>" % "x".join(str(d) for d in shape)


def write_model(a, out):
    v = lambda n: "tensor<%dxf32>" % n
    for name, shape in shapes(a).items():
        out.write("dynb.param @%s : %s\n" % (name, tensor_type(shape)))
    out.write(
        "func.func @expert(%%x: %s) -> %s attributes {dynb.experts = %d : i64} {\n"
        % (v(a.d), v(a.out_dim), a.experts))
    out.write("  %%h = dynb.linear %%x weight @W1 bias @b1 : %s -> %s\n"
              % (v(a.d), v(a.hidden)))
    out.write("  %%r = dynb.relu %%h : %s\n" % v(a.hidden))
    out.write("  %%y = dynb.linear %%r weight @W2 bias @b2 : %s -> %s\n"
              % (v(a.hidden), v(a.out_dim)))
    out.write("  return %%y : %s\n}\n" % v(a.out_dim))
    noise = " noise @W_noise" if a.noise else ""
    seed = " {noise_seed = %d : i64}" % a.noise_seed if a.noise else ""
    for t in range(a.tokens):
        out.write("dynb.instance {\n")
        out.write("  %%x = dynb.embedding @X [%d] : %s\n" % (t, v(a.d)))
        out.write("  %%y = dynb.dispatch %%x gate @W_gate%s experts @expert top %d%s : %s -> %s\n"
                  % (noise, a.k, seed, v(a.d), v(a.out_dim)))
        out.write("  dynb.output %%y : %s\n}\n" % v(a.out_dim))


def write_json(a, out, lines):
    """The same model in the interchange format (docs/interchange.md)."""
    params = [{"name": name, "shape": shape} for name, shape in shapes(a).items()]
    expert = {"name": "expert", "experts": a.experts,
              "nodes": [{"op": "arg", "shape": [a.d]},
                        {"op": "linear", "inputs": [0], "weight": "W1", "bias": "b1"},
                        {"op": "relu", "inputs": [1]},
                        {"op": "linear", "inputs": [2], "weight": "W2", "bias": "b2"}],
              "outputs": [3]}
    dispatch = {"op": "dispatch", "inputs": [0], "gate": "W_gate", "experts": "expert",
                "top": a.k}
    if a.noise:
        dispatch.update({"noise": "W_noise", "noise_seed": a.noise_seed})
    model = {"params": params, "modules": [expert]}
    instances = ({"nodes": [{"op": "embedding", "table": "X", "index": t}, dispatch],
                  "outputs": [1]} for t in range(a.tokens))
    dump = lambda v: json.dumps(v, separators=(",", ":"))
    if lines:
        out.write(dump({"dynb": 1, "model": model}) + "\n")
        for inst in instances:
            out.write(dump(inst) + "\n")
    else:
        out.write(dump({"dynb": 1, "model": model, "instances": list(instances)}) + "\n")


def values(a, name, shape, rng):
    n = 1
    for d in shape:
        n *= d
    bound = shape[-1] ** -0.5
    quarter = lambda lo, hi: rng.randint(lo, hi) / 4.0
    if name == "X" and a.gate == "ties":
        return [quarter(-4, 4) for _ in range(n)]
    if name == "X" and a.gate == "hot":
        return [quarter(1, 4) for _ in range(n)]
    if name == "W_gate" and a.gate == "zero":
        return [0.0] * n
    if name == "W_gate" and a.gate == "ties":
        rows = []
        for e in range(shape[0]):
            rows.append(rows[-1] if e % 2 else
                        [quarter(-4, 4) for _ in range(shape[1])])
        return [x for row in rows for x in row]
    if name == "W_gate" and a.gate == "hot":
        hot = shape[0] // 2
        return [1.0 if i // shape[1] == hot else 0.0 for i in range(n)]
    return [rng.uniform(-bound, bound) for _ in range(n)]


def write_params(a, path):
    rng = random.Random(a.seed)
    header, blobs, offset = {}, [], 0
    for name, shape in shapes(a).items():
        vals = values(a, name, shape, rng)
        data = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    a = parse_args()
    with open(a.out, "w") as out:
        if a.out.endswith(".json") or a.out.endswith(".jsonl"):
            write_json(a, out, lines=a.out.endswith(".jsonl"))
        else:
            write_model(a, out)
    if a.params:
        write_params(a, a.params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
