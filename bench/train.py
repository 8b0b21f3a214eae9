#!/usr/bin/env python3
# The training benchmark: dynbc train against PyTorch on SST training trees, and the GEMM ceiling of a step.
"""Usage: bench/train.py BUILD_DIR [--quick] [--trees N] [--eager-trees N]
                        [--hdims 128,256] [--threads N] [--no-peers] [--out DIR]

For each hdim: the first N SST training trees with a label on every node
(sst2dynb --labels), seeded weights written by the peer script, then

- dynbc train --params P --batch-size 64 (Adam, lr 0.001) for 3 epochs
  under agenda: epoch 1 compiles its kernels (a fresh kernel cache), the
  trees/s is the better of epochs 2 and 3, whole epochs (planning each
  step, its forward and backward run, the optimizer update; the report's
  plan/run/update seconds);
- the peak resident memory of a 1-epoch and of a 3-epoch run (flat when
  nothing grows from batch to batch);
- the ceiling: the epoch's GEMM FLOPs (forward, and twice that for the
  backward's input and weight gradients) at the rates oneDNN reaches on
  the forward's shapes as static batches of 4096 rows, measured now by
  dynb-gemm-ceiling;
- PyTorch (bench/peers/treelstm_train_torch.py), the same trees, weights,
  order and optimizer: batched by hand by level on all N trees, and eager
  (one tree at a time, a backward pass each) on the first --eager-trees;
  each peer's epoch loss must equal dynbc's on the same trees (relative
  difference <= 1e-3) before its time counts.

Writes OUT/train.json (a --quick or --trees run: train-quick.json, which
the report skips) and prints the table. Defaults: --trees 2048,
--eager-trees 256, --hdims 128,256, OUT = BUILD_DIR/bench.
"""

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import treelstm as common  # noqa: E402

ROOT = common.ROOT
PEER = os.path.join(HERE, "peers", "treelstm_train_torch.py")
PARAMS_PEER = os.path.join(HERE, "peers", "treelstm_torch.py")
PYTHON = "/usr/bin/python3"
BATCH = 64
EPOCHS = 3
LOSS_RTOL = 1e-3
CLASSES = 5


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/train.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--quick", action="store_true", help="hdim 256, 512 trees, 64 eager")
    p.add_argument("--trees", type=int, default=0)
    p.add_argument("--eager-trees", type=int, default=0)
    p.add_argument("--hdims", default="")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--no-peers", dest="peers", action="store_false")
    p.add_argument("--out")
    return p.parse_args(argv)


def peak_rss(argv, log_path):
    """The peak resident bytes of one run of argv (getrusage of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    common.run_tool(argv, log_path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of the children is the largest of any child so far: only a
    # run larger than every earlier one shows; runs go smallest first.
    return max(before, after) * 1024


def tree_counts(graphs):
    """(trees, leaves, internal nodes) of an sst2dynb file."""
    trees = leaves = internals = 0
    with open(graphs) as f:
        for i, line in enumerate(f):
            if i == 0 or not line.strip():
                continue
            trees += 1
            leaves += line.count('"module":"leaf"')
            internals += line.count('"module":"internal"')
    return trees, leaves, internals


def gemm_ceiling(build, work_dir, hdim, leaves, internals):
    tool = os.path.join(build, "bin", "dynb-gemm-ceiling")
    h = hdim
    shapes = [(4096, h, 3 * h), (4096, 2 * h, 3 * h), (4096, h, h), (4096, h, CLASSES)]
    log = os.path.join(work_dir, f"train-ceiling-h{h}.log")
    common.run_tool([tool, "--fixed-m"] + [str(d) for s in shapes for d in s], log)
    with open(log) as f:
        rates = [float(line.split(": ")[1].split(" GFLOP/s")[0]) * 1e9
                 for line in f if line.startswith("gemm m=")]
    if len(rates) != len(shapes):
        raise common.BenchError(f"dynb-gemm-ceiling printed {len(rates)} rates, see {log}")
    nodes = leaves + internals
    forward = (leaves * 2 * 3 * h * h / rates[0]
               + internals * (2 * 3 * h * 2 * h / rates[1] + 2 * 2 * h * h / rates[2])
               + nodes * 2 * CLASSES * h / rates[3])
    flops = (leaves * 2 * 3 * h * h + internals * (2 * 3 * h * 2 * h + 2 * 2 * h * h)
             + nodes * 2 * CLASSES * h)
    # The backward pass: each GEMM's input gradient and weight gradient,
    # the forward's FLOPs twice, at the forward's rates.
    return {"rates_gflops": [r / 1e9 for r in rates], "shapes_mkn": shapes,
            "step_flops": 3 * flops, "seconds": 3 * forward}


def dynbc_train(build, graphs, params, work_dir, tag, epochs, threads, cache):
    report = os.path.join(work_dir, f"train-{tag}-e{epochs}.json")
    argv = [os.path.join(build, "bin", "dynbc"), "train", graphs, "--params", params,
            "--epochs", str(epochs), "--batch-size", str(BATCH), "--strategy", "agenda",
            "--save", os.path.join(work_dir, f"train-{tag}.safetensors"),
            "--report", report, "--cache-dir", cache]
    if threads:
        argv += ["--threads", str(threads)]
    rss = peak_rss(argv, os.path.join(work_dir, f"train-{tag}-e{epochs}.log"))
    with open(report) as f:
        return json.load(f), rss, argv


def peer(graphs, params, mode, threads, work_dir, tag):
    argv = [PYTHON, PEER, graphs, params, "--mode", mode, "--batch", str(BATCH)]
    if threads:
        argv += ["--threads", str(threads)]
    log = os.path.join(work_dir, f"peer-{mode}-{tag}.log")
    common.run_tool(argv, log)
    with open(log) as f:
        return json.loads(f.read().splitlines()[-1])


def sst_graphs(build, work_dir, hdim, trees):
    out = os.path.join(work_dir, f"train-h{hdim}-n{trees}.jsonl")
    if not os.path.exists(out):
        common.run_tool([os.path.join(build, "bin", "sst2dynb"),
                         os.path.join(common.SST_DIR, "train.txt"), "--hdim", str(hdim),
                         "--labels", "--limit", str(trees), "-o", out],
                        out + ".log")
    return out


def measure(args, hdim, trees, eager_trees, work_dir):
    build = args.build
    graphs = sst_graphs(build, work_dir, hdim, trees)
    params = os.path.join(work_dir, f"train-h{hdim}-params.safetensors")
    common.run_tool([PYTHON, PARAMS_PEER, "params", graphs, params, "--seed", "1"],
                    params + ".log")
    n, leaves, internals = tree_counts(graphs)
    cache = os.path.join(work_dir, f"train-cache-h{hdim}")
    subprocess.run(["rm", "-rf", cache], check=True)
    one, rss1, _ = dynbc_train(build, graphs, params, work_dir, f"h{hdim}", 1, args.threads, cache)
    full, rss3, argv = dynbc_train(build, graphs, params, work_dir, f"h{hdim}", EPOCHS,
                                   args.threads, cache)
    epochs = full["epochs"]
    best = max(epochs[1:], key=lambda e: e["instances_per_second"])
    ceiling = gemm_ceiling(build, work_dir, hdim, leaves, internals)
    row = {"hdim": hdim, "trees": n, "leaves": leaves, "internals": internals,
           "batch": BATCH, "strategy": "agenda",
           "dynb_trees_per_s": best["instances_per_second"],
           "dynb_epoch": best["epoch"],
           "dynb_plan_s": best["plan_seconds"], "dynb_run_s": best["run_seconds"],
           "dynb_update_s": best["update_seconds"], "dynb_epoch_s": best["train_seconds"],
           "dynb_epoch1_loss": epochs[0]["train_loss"],
           "dynb_epoch1_s": epochs[0]["train_seconds"],
           "peak_rss_1_epoch": rss1, "peak_rss_3_epochs": rss3,
           "ceiling_trees_per_s": n / ceiling["seconds"], "ceiling": ceiling,
           "dynb_over_ceiling": best["instances_per_second"] * ceiling["seconds"] / n,
           "dynb_run_over_ceiling": ceiling["seconds"] / best["run_seconds"],
           "command": shlex.join(argv)}
    if args.peers:
        level = peer(graphs, params, "level", args.threads, work_dir, f"h{hdim}")
        err = abs(level["epoch_loss"] - row["dynb_epoch1_loss"]) / abs(row["dynb_epoch1_loss"])
        if err > LOSS_RTOL:
            raise common.BenchError(f"hdim {hdim}: PyTorch by level ends epoch 1 at loss "
                                    f"{level['epoch_loss']}, dynbc at {row['dynb_epoch1_loss']}")
        level["loss_rel_diff"] = err
        row["level"] = level
        sub = sst_graphs(build, work_dir, hdim, eager_trees)
        sub_run, _, _ = dynbc_train(build, sub, params, work_dir, f"h{hdim}-sub", 1,
                                    args.threads, cache)
        eager = peer(sub, params, "eager", args.threads, work_dir, f"h{hdim}")
        want = sub_run["epochs"][0]["train_loss"]
        err = abs(eager["epoch_loss"] - want) / abs(want)
        if err > LOSS_RTOL:
            raise common.BenchError(f"hdim {hdim}: PyTorch eager ends epoch 1 at loss "
                                    f"{eager['epoch_loss']}, dynbc at {want}")
        eager["loss_rel_diff"] = err
        row["eager"] = eager
        faster = max(level["trees_per_second"], eager["trees_per_second"])
        row["dynb_over_best_peer"] = row["dynb_trees_per_s"] / faster
    return row


def table(rows):
    head = ("| hdim | trees | dynb trees/s (plan / run / update s) | ceiling trees/s | "
            "dynb / ceiling | run / ceiling | PyTorch level | PyTorch eager | "
            "dynb / faster peer | peak RSS 1 / 3 epochs |")
    lines = [head, "|" + "---:|" * (head.count("|") - 1)]
    for r in rows:
        lvl, eag = r.get("level"), r.get("eager")
        lines.append("| %d | %d | %.0f (%.2f / %.2f / %.2f) | %.0f | %.0f%% | %.0f%% | %s | %s | %s | "
                     "%.0f / %.0f MiB |" % (
                         r["hdim"], r["trees"], r["dynb_trees_per_s"], r["dynb_plan_s"],
                         r["dynb_run_s"], r["dynb_update_s"], r["ceiling_trees_per_s"],
                         100 * r["dynb_over_ceiling"], 100 * r["dynb_run_over_ceiling"],
                         "%.0f" % lvl["trees_per_second"] if lvl else "-",
                         "%.1f (%d trees)" % (eag["trees_per_second"], eag["trees"]) if eag else "-",
                         "%.2fx" % r["dynb_over_best_peer"] if lvl else "-",
                         r["peak_rss_1_epoch"] / 2**20, r["peak_rss_3_epochs"] / 2**20))
    return lines


def main(argv):
    args = parse_args(argv)
    argv = argv[1:]
    args.build = os.path.abspath(args.build)
    hdims = [int(h) for h in args.hdims.split(",")] if args.hdims else (
        [256] if args.quick else [128, 256])
    trees = args.trees or (512 if args.quick else 2048)
    eager_trees = args.eager_trees or (64 if args.quick else 256)
    out = os.path.abspath(args.out or os.path.join(args.build, "bench"))
    work_dir = os.path.join(out, "train-work")
    os.makedirs(work_dir, exist_ok=True)
    full = not (args.quick or args.trees or args.hdims or args.eager_trees)
    if args.peers:
        probe = subprocess.run([PYTHON, "-c", "import torch, numpy"], capture_output=True,
                               text=True)
        if probe.returncode != 0:
            raise SystemExit("bench/train.py: the PyTorch peers need python3-torch and "
                             "python3-numpy (tools/dev deps --bench), or --no-peers")
    machine = common.machine_info()
    rows = []
    try:
        for h in hdims:
            print(f"train: hdim {h}, {trees} trees ...", flush=True)
            rows.append(measure(args, h, trees, eager_trees, work_dir))
    except common.BenchError as e:
        print(f"bench/train.py: {e}", file=sys.stderr)
        return 1
    after = common.cpu_busy_share()
    result = {"machine": machine, "cpu_busy_share_after": after, "rows": rows,
              "batch": BATCH, "epochs": EPOCHS,
              "command": shlex.join([os.path.join(ROOT, "bench", "run.sh"), args.build,
                                     "train"] + argv)}
    path = os.path.join(out, "train.json" if full else "train-quick.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(table(rows)))
    for w in (common.busy_warning(machine.get("cpu_busy_share_before"), "before"),
              common.busy_warning(after, "after")):
        if w:
            print(w)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
