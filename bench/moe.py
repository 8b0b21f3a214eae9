#!/usr/bin/env python3
# Mixture-of-experts benchmark (docs/workloads.md §3): tokens/s per strategy, against one dense GEMM of the same FLOPs.
"""Usage: bench/moe.py BUILD_DIR [--quick] [--grid seed|lm|all] [--out DIR]
                       [--threads N] [--max-memory SIZE]

For every point of the seed grid (d 256, hidden 256, k 1; experts 1, 10,
100, 1000, 10000 x tokens 1, 10, 100, 1000, 10000) and the LM setting (d 512,
hidden 1024, k 4; experts 4, 32, 256 x tokens 1024, 8192): writes the batch
with examples/moe/moegen.py, runs it through BUILD_DIR/bin/dynbc under every
strategy (seeded parameters, noise off), and times one dense GEMM with the
same FLOPs (BUILD_DIR/bin/dynb-gemm-ceiling, M = tokens, K = d, N chosen so
2 M K N equals the layer's FLOPs: gate plus k experts a token). Prints a
table a grid and writes moe.json and moe.md to BUILD_DIR/bench (or --out).

At 10,000 experts the expert weights (5.2 GB) stream from memory: those rows
also report the parameter bytes the GEMMs read per pass over the run time,
against this machine's streaming bandwidth (BUILD_DIR/bin/dynb-stream-bandwidth,
measured in the same run). Points whose parameters and buffers would exceed
--max-memory (default: dynbc's, 16G) are skipped and say so.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "examples", "moe", "moegen.py")
STRATEGIES = ("none", "depth", "agenda")
SEED_GRID = dict(name="seed", d=256, hidden=256, k=1,
                 experts=(1, 10, 100, 1000, 10000),
                 tokens=(1, 10, 100, 1000, 10000))
LM_GRID = dict(name="lm", d=512, hidden=1024, k=4, experts=(4, 32, 256),
               tokens=(1024, 8192))
QUICK = {"seed": dict(experts=(10, 100), tokens=(100, 1000)),
         "lm": dict(experts=(32,), tokens=(1024,))}
# 'none' launches one dispatch a token and gets one timed pass. Batched
# strategies get passes for about TIMED_FLOPS of the layer's work (some
# 0.1-0.2 s, the dense GEMM's five rounds together), at least 3 and at
# most 100: at 1,000 tokens a pass is about 1.5 ms, and three of them, the
# first often the slowest, put the median at the mercy of one slow pass.
REPEAT_NONE = 1
REPEAT_BATCHED_MIN, REPEAT_BATCHED_MAX = 3, 100
TIMED_FLOPS = 2e10
TARGET_RATIO, TARGET_MIN_TOKENS_PER_EXPERT = 0.85, 64
STREAMING_EXPERTS = 10000
SEED = 1


class BenchError(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError("expected bytes with an optional K, M or G: %r" % text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/moe.py",
                                description="Mixture-of-experts benchmark of docs/workloads.md §3.")
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--quick", action="store_true",
                   help="a subset (seed: experts 10, 100 x tokens 100, 1000; lm: 32 experts, "
                        "1024 tokens): a smoke test of the harness")
    p.add_argument("--grid", choices=("seed", "lm", "all"), default="all")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--threads", type=int, default=0, metavar="N")
    p.add_argument("--max-memory", type=parse_size, default=16 << 30, metavar="SIZE",
                   help="skip points needing more (parameters plus buffers); passed to dynbc")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="skip the PyTorch peers (eager vanillaExperts and grouped by expert)")
    return p.parse_args(argv)


def run(cmd, what):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise BenchError("%s failed (exit %d): %s\n%s" % (what, proc.returncode, " ".join(cmd),
                                                          proc.stderr.strip()[-2000:]))
    return proc.stdout


def layer_flops(g, experts, tokens):
    """Gate (d x experts) plus k experts of two Linear layers, a token."""
    d, h, k = g["d"], g["hidden"], g["k"]
    return 2 * tokens * (d * experts + k * (d * h + h * d))


def batched_repeat(g, experts, tokens):
    """Timed passes for depth, agenda and the grouped peer at this point."""
    passes = -(-TIMED_FLOPS // layer_flops(g, experts, tokens))
    return int(min(REPEAT_BATCHED_MAX, max(REPEAT_BATCHED_MIN, passes)))


# dynbc's executor keeps copies of expert weights in oneDNN's layout while
# they total at most this (ExecutorOptions::dispatchPackedWeightMaxBytes).
PACKED_WEIGHT_MAX_BYTES = 1 << 30


def memory_needed(g, experts, tokens):
    """Bytes dynbc holds at once: parameters, the batched plan's buffers and
    the packed expert weights (each of W1, W2 while within the budget)."""
    d, h, k = g["d"], g["hidden"], g["k"]
    params = tokens * d + experts * d + experts * (h * d + h + d * h + d)
    routed = tokens * k
    arena = tokens * d + tokens * experts + routed * (d + 2 * h + d) + tokens * d
    packed = 0
    for weight in (4 * experts * h * d, 4 * experts * d * h):
        if packed + weight <= PACKED_WEIGHT_MAX_BYTES:
            packed += weight
    return 4 * (params + arena) + packed


def dense_gemm(build, m, k, n):
    # The median of its rounds, as dynb's figure is the median of its timed
    # passes: on this shared machine a best-of against a median made the
    # ratio swing with the load.
    out = run([os.path.join(build, "bin", "dynb-gemm-ceiling"), "--fixed-m", "--median",
               str(m), str(k), str(n)], "dense GEMM")
    mm = re.search(r"([\d.]+) GFLOP/s \(([\d.]+) us a call\)", out)
    if not mm:
        raise BenchError("cannot read dynb-gemm-ceiling's output: %r" % out)
    return float(mm.group(1)), float(mm.group(2)) * 1e-6


def stream_bandwidth(build):
    out = run([os.path.join(build, "bin", "dynb-stream-bandwidth")], "stream bandwidth")
    mm = re.search(r"read ([\d.]+) GB/s, triad ([\d.]+) GB/s", out)
    if not mm:
        raise BenchError("cannot read dynb-stream-bandwidth's output: %r" % out)
    return float(mm.group(1)), float(mm.group(2))


def dynbc_run(build, model, strategies, repeat, args, report):
    cmd = [os.path.join(build, "bin", "dynbc"), "run", model, "--seed", str(SEED),
           "--strategy=" + ",".join(strategies), "--repeat", str(repeat),
           "--max-memory", str(args.max_memory), "--report", report]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    run(cmd, "dynbc run")
    with open(report) as f:
        return {r["strategy"]: r for r in json.load(f)["results"]}


PEER_SCRIPT = os.path.join(ROOT, "bench", "peers", "moe_torch.py")
PEER_PYTHON = "/usr/bin/python3"
# The peers' weights are written by numpy: 10,000 experts (5.2 GB) would
# double the memory the point needs, so the peers stop below that.
PEER_MAX_EXPERTS = 1000
PEER_ATOL = 1e-3


def peer_point(g, experts, tokens, model, args, work, repeat):
    """PyTorch on the same tokens and weights: dynbc (agenda) writes its
    outputs with the weights the peers load, and each peer's outputs must
    match them before its time counts."""
    params = model + ".peer.safetensors"
    ref = model + ".peer.npy"
    run([PEER_PYTHON, PEER_SCRIPT, "params", params, "--tokens", str(tokens),
         "--experts", str(experts), "--d", str(g["d"]), "--hidden", str(g["hidden"]),
         "--seed", str(SEED)], "peer params")
    cmd = [os.path.join(build_dir, "bin", "dynbc"), "run", model, "--params", params,
           "--strategy=agenda", "--max-memory", str(args.max_memory), "--output", ref]
    run(cmd, "dynbc run (peer check)")
    peers = {}
    try:
        for mode, passes in (("eager", 1), ("grouped", repeat)):
            cmd = [PEER_PYTHON, PEER_SCRIPT, "run", params, "--k", str(g["k"]), "--mode", mode,
                   "--repeat", str(passes), "--check", ref, "--atol", str(PEER_ATOL)]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            out = run(cmd, "PyTorch " + mode)
            peers[mode] = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    finally:
        for f in (params, ref):
            if os.path.exists(f):
                os.remove(f)
    return peers


def bench_point(g, experts, tokens, args, work):
    d, h, k = g["d"], g["hidden"], g["k"]
    point = dict(grid=g["name"], d=d, hidden=h, k=k, experts=experts, tokens=tokens,
                 tokens_per_expert=tokens * k / experts)
    need = memory_needed(g, experts, tokens)
    point["memory_bytes"] = need
    if k > experts:
        point["skipped"] = "k %d > %d experts" % (k, experts)
        return point
    if need > args.max_memory:
        point["skipped"] = "needs %.1f GiB, more than --max-memory %.1f GiB" % (
            need / 2**30, args.max_memory / 2**30)
        return point
    model = os.path.join(work, "moe-%s-e%d-t%d.mlir" % (g["name"], experts, tokens))
    run([sys.executable, GEN, "--tokens", str(tokens), "--experts", str(experts), "--k", str(k),
         "--d", str(d), "--hidden", str(h), "-o", model], "moegen")
    repeat = batched_repeat(g, experts, tokens)
    point["batched_passes"] = repeat
    results = dynbc_run(build_dir, model, ["none"], REPEAT_NONE, args, model + ".none.json")
    results.update(dynbc_run(build_dir, model, ["depth", "agenda"], repeat, args,
                             model + ".batched.json"))
    if args.peers and experts <= PEER_MAX_EXPERTS:
        point["peers"] = peer_point(g, experts, tokens, model, args, work, repeat)
    os.remove(model)
    point["strategies"] = {}
    for s in STRATEGIES:
        r = results[s]
        sec = r["run_seconds_median"]
        passes = max(1, len(r["run_seconds"]))
        point["strategies"][s] = dict(
            run_seconds=sec, tokens_per_second=tokens / sec if sec > 0 else 0.0,
            launches=r["launches"], jit_seconds=r["jit_seconds"],
            param_bytes_per_pass=r.get("dispatch_param_bytes", 0) / passes,
            gemm_flops_per_pass=r.get("dispatch_gemm_flops", 0) / passes)
    flops = layer_flops(g, experts, tokens)
    # N = the layer's FLOPs over 2 M K, rounded up to a multiple of 64: an
    # odd N (513 at one expert) puts oneDNN on its slow edge kernels and
    # would make the ceiling look low. The dense time is the layer's FLOPs
    # at the rate measured for that shape.
    n = max(64, -(-round(flops / (2 * tokens * d)) // 64) * 64)
    gflops, _ = dense_gemm(build_dir, tokens, d, n)
    dense_sec = flops / (gflops * 1e9)
    point["dense"] = dict(m=tokens, k=d, n=n, gflops=gflops, seconds=dense_sec,
                          tokens_per_second=tokens / dense_sec)
    best = max(("depth", "agenda"), key=lambda s: point["strategies"][s]["tokens_per_second"])
    b = point["strategies"][best]
    point["best"] = best
    point["speedup_over_none"] = b["tokens_per_second"] / max(
        point["strategies"]["none"]["tokens_per_second"], 1e-30)
    point["ratio_to_dense"] = b["tokens_per_second"] / point["dense"]["tokens_per_second"]
    if experts >= STREAMING_EXPERTS:
        point["param_gb_per_second"] = b["param_bytes_per_pass"] / b["run_seconds"] * 1e-9
    return point


def fmt_rate(v):
    return "{:,.0f}".format(v)


def table(points, g, stream):
    lines = ["grid %s: d %d, hidden %d, k %d (tokens/s; ratio = best batched / dense GEMM "
             "of the same FLOPs)" % (g["name"], g["d"], g["hidden"], g["k"]),
             "| experts | tokens | tok/expert | none | depth | agenda | speedup | dense GEMM "
             "| ratio | target | PyTorch eager | PyTorch grouped | best / grouped | note |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for p in points:
        head = "| %d | %d | %.1f " % (p["experts"], p["tokens"], p["tokens_per_expert"])
        if "skipped" in p:
            lines.append(head + "| | | | | | | | | | | skipped: %s |" % p["skipped"])
            continue
        st = p["strategies"]
        target = ""
        if p["tokens_per_expert"] >= TARGET_MIN_TOKENS_PER_EXPERT:
            target = "met" if p["ratio_to_dense"] >= TARGET_RATIO else "MISSED (<85%)"
        note = ""
        if "param_gb_per_second" in p and stream:
            note = "params %.1f GB/s = %.0f%% of stream read %.1f GB/s" % (
                p["param_gb_per_second"], 100 * p["param_gb_per_second"] / stream[0], stream[0])
        peers = p.get("peers")
        if peers:
            best = st[p["best"]]["tokens_per_second"]
            peer_cells = "%s | %s | %.1fx" % (
                fmt_rate(peers["eager"]["tokens_per_second"]),
                fmt_rate(peers["grouped"]["tokens_per_second"]),
                best / peers["grouped"]["tokens_per_second"])
        else:
            peer_cells = " | | "
        lines.append(head + "| %s | %s | %s | %.1fx | %s | %.0f%% | %s | %s | %s |" % (
            fmt_rate(st["none"]["tokens_per_second"]), fmt_rate(st["depth"]["tokens_per_second"]),
            fmt_rate(st["agenda"]["tokens_per_second"]), p["speedup_over_none"],
            fmt_rate(p["dense"]["tokens_per_second"]), 100 * p["ratio_to_dense"], target,
            peer_cells, note))
    return "\n".join(lines)


build_dir = None


def main(argv):
    global build_dir
    args = parse_args(argv)
    build_dir = os.path.abspath(args.build)
    for tool in ("dynbc", "dynb-gemm-ceiling", "dynb-stream-bandwidth"):
        if not os.access(os.path.join(build_dir, "bin", tool), os.X_OK):
            raise BenchError("%s/bin/%s is missing: build first (tools/dev build)" % (build_dir, tool))
    out = os.path.abspath(args.out or os.path.join(build_dir, "bench"))
    os.makedirs(out, exist_ok=True)
    grids = [g for g in (SEED_GRID, LM_GRID) if args.grid in (g["name"], "all")]
    stream = None
    if any(STREAMING_EXPERTS in (QUICK[g["name"]]["experts"] if args.quick else g["experts"])
           for g in grids):
        stream = stream_bandwidth(build_dir)
        print("stream bandwidth: read %.1f GB/s, triad %.1f GB/s" % stream, flush=True)
    report = dict(date=time.strftime("%Y-%m-%d %H:%M"), quick=args.quick,
                  max_memory=args.max_memory, stream_gb_per_second=stream, points=[])
    tables = []
    for g in grids:
        experts = QUICK[g["name"]]["experts"] if args.quick else g["experts"]
        tokens = QUICK[g["name"]]["tokens"] if args.quick else g["tokens"]
        points = []
        for e in experts:
            for t in tokens:
                start = time.time()
                p = bench_point(g, e, t, args, out)
                points.append(p)
                status = p.get("skipped") or "best %s %.0f tok/s, %.1fx none, %.0f%% of dense" % (
                    p["best"], p["strategies"][p["best"]]["tokens_per_second"],
                    p["speedup_over_none"], 100 * p["ratio_to_dense"])
                print("  %s experts %5d tokens %5d: %s (%.0f s)" % (g["name"], e, t, status,
                                                                   time.time() - start), flush=True)
        report["points"] += points
        tables.append(table(points, g, stream))
        print("\n" + tables[-1] + "\n", flush=True)
    # A subset never overwrites the full results (bench/report.py reads moe.json).
    stem = "moe" if not args.quick and args.grid == "all" else "moe-" + ("quick" if args.quick else args.grid)
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(report, f, indent=2)
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write("\n\n".join(tables) + "\n")
    print("wrote %s and %s" % (os.path.join(out, stem + ".json"), os.path.join(out, stem + ".md")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print("bench/moe.py: %s" % e, file=sys.stderr)
        sys.exit(1)
