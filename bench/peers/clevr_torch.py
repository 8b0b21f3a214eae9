#!/usr/bin/env python3
# PyTorch peers for the CLEVR (IEP) benchmark: dynb's own questions, weights and features, run the two ways users write it.
"""Usage:
  clevr_torch.py params QUESTIONS OUT.safetensors [--seed N]
      writes seeded weights of the IEP model (docs/clevr.md's names and
      PyTorch layouts), standard normal image features 'features'
      [max image_index + 1, 1024, 14, 14] and the stem's output on them,
      'stem_out' [max image_index + 1, 128, 14, 14] (what dynbc run
      --modules-only reads instead of running the stem), as one
      safetensors file, for dynbc run --params and for the peers
  clevr_torch.py run QUESTIONS PARAMS.safetensors --mode eager|level
                 [--modules-only] [--repeat N] [--threads N]
                 [--check DYNB.npy] [--rtol X]
      runs every question of QUESTIONS (a CLEVR question file) through the
      model in PyTorch and prints one JSON object: seconds of each timed
      pass (after a warm-up pass), programs/s of the median, and with
      --check the largest difference from dynb's outputs (dynbc run
      --output, one row of 32 answer scores a question); exits 1 when they
      differ by more than --rtol (default 1e-3) of dynb's largest |output|
      (checked after the warm-up pass: then no pass is timed).
      --modules-only times the program modules alone, as dynbc run
      --modules-only does: each question starts from row image_index of
      'stem_out' and its output is its root module's map (one row of
      128 x 14 x 14 values in C,H,W order a question, compared with dynbc
      run --modules-only --output); no stem, no classifier

Modes: 'eager' is one question at a time, module by module, as the original
clevr-iep code runs its programs (stem, the program's modules in order,
classifier, each a batch of one). 'level' batches by hand: the stems of the
whole batch are one call, the program nodes are grouped by depth (scene 1,
a node one above its deepest input) and within a depth by token, each group
one batched module call (index_select gathers, index_copy_ scatters), and
the roots go through the classifier together. With --modules-only both
modes skip the stem (each question reads its image's row of 'stem_out')
and the classifier (the roots' maps are the outputs).
The model: module dim 128, 1024 x 14 x 14 features, 32 answers (the
defaults of dynbc; docs/clevr.md).
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from safetensors_io import read_safetensors, write_safetensors

DIM, FEAT, HW, PROJ, FC, ANSWERS = 128, 1024, 14, 512, 1024, 32
UNARY = (["scene"] +
         ["filter_color[%s]" % c for c in
          ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")] +
         ["filter_shape[%s]" % s for s in ("cube", "sphere", "cylinder")] +
         ["filter_size[small]", "filter_size[large]",
          "filter_material[rubber]", "filter_material[metal]"] +
         ["relate[%s]" % r for r in ("left", "right", "behind", "front")] +
         ["same_size", "same_color", "same_material", "same_shape", "unique", "count",
          "exist", "query_shape", "query_color", "query_size", "query_material"])
BINARY = ["union", "intersect", "equal_color", "equal_shape", "equal_size",
          "equal_material", "equal_integer", "less_than", "greater_than"]


def read_questions(path):
    """Per question: its image row and its program as (token, inputs) in
    topological order, the root last."""
    with open(path) as f:
        doc = json.load(f)
    out = []
    for qi, q in enumerate(doc["questions"]):
        prog = []
        for n in q["program"]:
            vals = n.get("value_inputs") or []
            token = n["function"] + ("[%s]" % vals[0] if vals else "")
            if token not in UNARY and token not in BINARY:
                raise SystemExit("%s: question %d: unknown token %r" % (path, qi, token))
            prog.append((token, list(n.get("inputs") or [])))
        out.append((int(q.get("image_index", qi)), prog))
    return out


def param_shapes():
    s = {"stem.conv1.weight": [DIM, FEAT, 3, 3], "stem.conv1.bias": [DIM],
         "stem.conv2.weight": [DIM, DIM, 3, 3], "stem.conv2.bias": [DIM]}
    for tok in UNARY + BINARY:
        if tok in BINARY:
            s[tok + ".proj.weight"] = [DIM, 2 * DIM, 1, 1]
            s[tok + ".proj.bias"] = [DIM]
        for c in ("conv1", "conv2"):
            s["%s.%s.weight" % (tok, c)] = [DIM, DIM, 3, 3]
            s["%s.%s.bias" % (tok, c)] = [DIM]
    s.update({"classifier.proj.weight": [PROJ, DIM, 1, 1], "classifier.proj.bias": [PROJ],
              "classifier.fc1.weight": [FC, PROJ * (HW // 2) ** 2], "classifier.fc1.bias": [FC],
              "classifier.fc2.weight": [ANSWERS, FC], "classifier.fc2.bias": [ANSWERS]})
    return s


def make_params(questions, seed, threads=0):
    """PyTorch's default bounds (1/sqrt(fan in)) for weights and biases;
    standard normal features, and the stem's output on them ('stem_out',
    the input of dynbc run --modules-only and of the peers' modules-only
    mode, so the modules alone see the maps they see in the whole pass)."""
    rng = np.random.default_rng(seed)
    shapes = param_shapes()
    params = {}
    for name in sorted(shapes):
        w = shapes[name.rsplit(".", 1)[0] + ".weight"]
        bound = 1.0 / np.sqrt(int(np.prod(w[1:])))
        params[name] = rng.uniform(-bound, bound, size=shapes[name]).astype(np.float32)
    rows = max(img for img, _ in questions) + 1
    params["features"] = rng.standard_normal((rows, FEAT, HW, HW), dtype=np.float32)
    import torch
    torch.set_num_threads(threads or os.cpu_count())
    model = Iep(torch, {k: params[k] for k in params if k.startswith("stem.")})
    feats = torch.from_numpy(params["features"])
    with torch.no_grad():  # a few images at a time: bounded memory
        params["stem_out"] = torch.cat([model.stem(feats[i:i + 16])
                                        for i in range(0, rows, 16)]).numpy()
    return params


class Iep:
    def __init__(self, torch, params):
        self.t, self.F = torch, torch.nn.functional
        self.p = {k: torch.from_numpy(np.array(v)) for k, v in params.items()}

    def conv(self, x, name, pad):
        return self.F.conv2d(x, self.p[name + ".weight"], self.p[name + ".bias"], padding=pad)

    def stem(self, x):
        relu = self.F.relu
        return relu(self.conv(relu(self.conv(x, "stem.conv1", 1)), "stem.conv2", 1))

    def module(self, token, xs):
        relu = self.F.relu
        if token in BINARY:
            x = relu(self.conv(self.t.cat(xs, dim=1), token + ".proj", 0))
        else:
            x = xs[0]
        return relu(x + self.conv(relu(self.conv(x, token + ".conv1", 1)), token + ".conv2", 1))

    def classifier(self, x):
        F = self.F
        x = F.max_pool2d(F.relu(self.conv(x, "classifier.proj", 0)), 2)
        x = F.relu(F.linear(x.flatten(1), self.p["classifier.fc1.weight"],
                            self.p["classifier.fc1.bias"]))
        return F.linear(x, self.p["classifier.fc2.weight"], self.p["classifier.fc2.bias"])

    def eager(self, image, program):
        """One question, module by module: its answer scores, [1, 32]."""
        feats = self.p["features"]
        stem = self.stem(feats[image:image + 1])
        outs = []
        for token, inputs in program:
            outs.append(self.module(token, [stem] if token == "scene" else
                                    [outs[i] for i in inputs]))
        return self.classifier(outs[-1])

    def eager_modules(self, image, program):
        """One question's program modules alone, from its image's row of
        stem_out: its root's map, [1, 128, 14, 14]."""
        stem = self.p["stem_out"][image:image + 1]
        outs = []
        for token, inputs in program:
            outs.append(self.module(token, [stem] if token == "scene" else
                                    [outs[i] for i in inputs]))
        return outs[-1]

    def level(self, plan, modules_only=False):
        """All questions, one call a (depth, token) group: [questions, 32],
        or with modules_only (from stem_out, no classifier) the roots' maps,
        [questions, 128, 14, 14]."""
        t = self.t
        if modules_only:
            stems = self.p["stem_out"].index_select(0, plan["images"])
        else:
            stems = self.stem(self.p["features"].index_select(0, plan["images"]))
        maps = t.empty(plan["total"], DIM, HW, HW)
        for token, ids, ins in plan["groups"]:
            xs = [stems.index_select(0, ins[0])] if token == "scene" else \
                [maps.index_select(0, i) for i in ins]
            maps.index_copy_(0, ids, self.module(token, xs))
        roots = maps.index_select(0, plan["roots"])
        return roots if modules_only else self.classifier(roots)


def level_plan(torch, questions):
    """Depths, groups and gather indices of the batch, built once (not timed:
    a user would build them while reading the batch)."""
    groups, base, roots = {}, 0, []
    for qi, (_, program) in enumerate(questions):
        depth = []
        for k, (token, inputs) in enumerate(program):
            d = 1 + max((depth[i] for i in inputs), default=0)
            depth.append(d)
            g = groups.setdefault((d, token), {"ids": [], "ins": []})
            g["ids"].append(base + k)
            # scene reads the question's stem output (row qi of the stems)
            g["ins"].append([qi] if token == "scene" else [base + i for i in inputs])
        roots.append(base + len(program) - 1)
        base += len(program)
    lt = lambda v: torch.tensor(v, dtype=torch.long)
    ordered = []
    for (d, token) in sorted(groups):
        g = groups[(d, token)]
        arity = len(g["ins"][0])
        ordered.append((token, lt(g["ids"]), [lt([x[j] for x in g["ins"]]) for j in range(arity)]))
    return {"total": base, "groups": ordered, "roots": lt(roots),
            "images": lt([img for img, _ in questions])}


def run(args):
    import torch
    # dynb uses every hardware thread by default (OpenMP); so do the peers.
    torch.set_num_threads(args.threads or os.cpu_count())
    questions = read_questions(args.questions)
    model = Iep(torch, read_safetensors(args.params))
    plan = level_plan(torch, questions) if args.mode == "level" else None

    if args.modules_only and "stem_out" not in model.p:
        raise SystemExit("%s has no 'stem_out' (written by clevr_torch.py params)" % args.params)

    def one_pass():
        # One row a question: 32 scores, or (modules only) the root's map,
        # flattened in C,H,W order as dynbc run --output writes it.
        with torch.no_grad():
            if args.mode == "eager":
                run_one = model.eager_modules if args.modules_only else model.eager
                out = torch.cat([run_one(img, prog) for img, prog in questions])
            else:
                out = model.level(plan, args.modules_only)
            return out.reshape(len(questions), -1).numpy()

    out = one_pass()  # warm-up, and the outputs checked before any timing
    result = {"peer": "pytorch-" + args.mode, "torch": torch.__version__,
              "part": "modules" if args.modules_only else "whole",
              "threads": torch.get_num_threads(), "programs": len(questions),
              "program_nodes": sum(len(p) for _, p in questions),
              "groups": len(plan["groups"]) if plan else sum(len(p) for _, p in questions)}
    if args.check:
        ref = np.load(args.check)
        if ref.shape != out.shape:
            raise SystemExit("outputs are %s, dynb's %s" % (out.shape, ref.shape))
        err = float(np.max(np.abs(ref - out)))
        scale = float(np.max(np.abs(ref)))
        result["max_abs_error"] = err
        result["max_abs_output"] = scale
        # float32 convolutions summed in different orders differ a little:
        # the tolerance is relative to the largest score or map value (the
        # seeded scores are small, so a plain absolute 1e-3 would be loose)
        result["tolerance"] = args.rtol * max(scale, 1e-6)
        result["check"] = "ok" if err <= result["tolerance"] else "FAIL"
        if result["check"] != "ok":  # no time for work that differs
            print(json.dumps(result))
            return 1
    seconds = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        one_pass()
        seconds.append(time.perf_counter() - start)
    med = statistics.median(seconds)
    result.update({"seconds": seconds, "median_seconds": med,
                   "programs_per_second": len(questions) / med})
    print(json.dumps(result))
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="clevr_torch.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("params")
    pp.add_argument("questions")
    pp.add_argument("out")
    pp.add_argument("--seed", type=int, default=1)
    pp.add_argument("--threads", type=int, default=0)
    pr = sub.add_parser("run")
    pr.add_argument("questions")
    pr.add_argument("params")
    pr.add_argument("--mode", choices=("eager", "level"), required=True)
    pr.add_argument("--modules-only", action="store_true",
                    help="the program modules alone, from 'stem_out' to each root's map")
    pr.add_argument("--repeat", type=int, default=3)
    pr.add_argument("--threads", type=int, default=0)
    pr.add_argument("--check", metavar="DYNB.npy")
    pr.add_argument("--rtol", type=float, default=1e-3,
                    help="largest difference allowed, relative to dynb's largest |output|")
    args = p.parse_args(argv)
    if args.cmd == "params":
        write_safetensors(args.out, make_params(read_questions(args.questions), args.seed,
                                                args.threads))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
