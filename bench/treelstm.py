#!/usr/bin/env python3
# TreeLSTM benchmark (docs/workloads.md §1): runs dynbc over the SST trees and reports throughput, launches, profile and memory.
"""Usage: bench/treelstm.py BUILD_DIR [--quick] [--out DIR] [--threads N] [--trees N]

Converts the SST trees with BUILD_DIR/bin/sst2dynb, runs BUILD_DIR/bin/dynbc
over a grid of hidden sizes, batch sizes and strategies, prints one table per
hidden size and the headline figures, and writes treelstm.json (raw figures)
and treelstm.md (the tables) to BUILD_DIR/bench (or --out DIR).
See bench/README.md.
"""

import argparse
import datetime
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST_DIR = os.path.join(ROOT, "examples", "treelstm", "data", "sst")

STRATEGIES = ("none", "depth", "agenda")
GRID_HDIMS = (256, 512)
GRID_BATCHES = (1, 16, 64, 256)
# `none` launches one kernel per node (~700 trees/s at hdim 256), so it gets a
# single timed pass; the batched strategies are fast and get more.
REPEAT_UNBATCHED = 1
REPEAT_BATCHED = 3
# The launch-overhead point: tiny cells, so the run time is mostly overhead.
OVERHEAD_HDIM, OVERHEAD_BATCH, OVERHEAD_REPEAT = 8, 64, 5
# The memory check: all of train.txt in consecutive batches, one timed pass.
MEMORY_HDIM, MEMORY_BATCH, MEMORY_STRATEGY = 256, 64, "agenda"
MEMORY_EARLY = slice(20, 40)   # batches 20..39 (0-based): the arena has grown by then
MEMORY_LATE_COUNT = 20         # compared with the mean of the last 20 batches
MEMORY_GROWTH_LIMIT = 0.02
# The scale check (issue 6): the dev set and the whole train set (7.8x the
# trees) at batch 256; how throughput and peak memory grow with the work, and
# peak memory against its floor: parameters, the activations one batch's
# schedule holds live at once, and the outputs kept for every tree.
SCALE_HDIM, SCALE_BATCH, SCALE_STRATEGY = 256, 256, "agenda"
SCALE_SPLITS = ("dev", "train")
# Each split is run reading the whole file first, and streamed (dynbc run
# --stream: one batch's graphs and plan in memory at a time).
SCALE_INPUTS = ("whole", "streamed")
SCALE_FLOOR_TARGET = 1.5
# Headline targets, in trees per second of the agenda strategy at batch 64.
TARGETS = {256: 5_000, OVERHEAD_HDIM: 40_000}
HEADLINE_BATCH, HEADLINE_STRATEGY = 64, "agenda"
SEED = 1
THREADING_ENV_PREFIXES = ("OMP_", "GOMP_", "KMP_", "DNNL_", "ONEDNN_")
BUSY_CPU_SHARE = 0.10   # warn when others keep this share of the CPUs busy before or after the runs


class BenchError(Exception):
    """A step of the benchmark failed; the message says which and why."""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/treelstm.py",
        description="TreeLSTM benchmark of docs/workloads.md §1 (see bench/README.md).")
    p.add_argument("build", metavar="BUILD_DIR", help="build directory holding bin/dynbc and bin/sst2dynb")
    p.add_argument("--quick", action="store_true",
                   help="hdim 256, batch 64, every strategy only (no overhead point, no memory check)")
    p.add_argument("--out", metavar="DIR", help="where treelstm.json/.md go (default BUILD_DIR/bench)")
    p.add_argument("--no-peers", dest="peers", action="store_false",
                   help="skip the PyTorch peers (eager and hand-batched by level)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="dynbc runtime threads (default 0: dynbc's default, all hardware threads)")
    p.add_argument("--trees", type=int, default=0, metavar="N",
                   help="only the first N dev trees (a smoke test of the harness: the figures are "
                        "not comparable); the memory check still reads all of train")
    return p.parse_args(argv)


# ---------------------------------------------------------------- the plan

def benchmark_plan(quick):
    """The dynbc calls to make, in order: dicts with kind, split, hdim, batch, strategies, repeat."""
    def call(kind, split, hdim, batch, strategies, repeat, stream=False):
        return dict(kind=kind, split=split, hdim=hdim, batch=batch,
                    strategies=list(strategies), repeat=repeat, stream=stream)

    hdims, batches = ((256,), (64,)) if quick else (GRID_HDIMS, GRID_BATCHES)
    plan = []
    for hdim in hdims:
        for batch in batches:
            plan.append(call("grid", "dev", hdim, batch, ["none"], REPEAT_UNBATCHED))
            plan.append(call("grid", "dev", hdim, batch, ["depth", "agenda"], REPEAT_BATCHED))
    if not quick:
        plan.append(call("overhead", "dev", OVERHEAD_HDIM, OVERHEAD_BATCH, STRATEGIES, OVERHEAD_REPEAT))
        plan.append(call("memory", "train", MEMORY_HDIM, MEMORY_BATCH, [MEMORY_STRATEGY], 1))
        for mode in SCALE_INPUTS:
            for split in SCALE_SPLITS:
                plan.append(call("scale", split, SCALE_HDIM, SCALE_BATCH, [SCALE_STRATEGY], 1,
                                 stream=mode == "streamed"))
    return plan


# ---------------------------------------------------------------- running tools

def run_tool(argv, log_path):
    """Runs argv, keeps its output in log_path; raises BenchError on failure."""
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise BenchError(f"cannot run {argv[0]}: {e.strerror}")
    wall = time.monotonic() - start
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(argv) + "\n" + proc.stdout)
    if proc.returncode != 0:
        raise BenchError(f"{os.path.basename(argv[0])} exited with status {proc.returncode}:\n"
                         f"$ {shlex.join(argv)}\n{proc.stdout.rstrip()}")
    return wall


class Runner:
    """Converts the trees once per (split, hdim) and makes the dynbc calls."""

    def __init__(self, build, work_dir, threads, dev_trees):
        self.sst2dynb = os.path.join(build, "bin", "sst2dynb")
        self.dynbc = os.path.join(build, "bin", "dynbc")
        for tool in (self.sst2dynb, self.dynbc):
            if not os.access(tool, os.X_OK):
                raise BenchError(f"{tool} not found: build first (tools/dev build)")
        self.work_dir = work_dir
        self.threads = threads
        self.dev_trees = dev_trees
        self.converted = {}

    def graphs(self, split, hdim):
        key = (split, hdim)
        if key not in self.converted:
            trees = os.path.join(SST_DIR, f"{split}.txt")
            limit = self.dev_trees if split == "dev" else 0
            name = f"sst-{split}-h{hdim}" + (f"-n{limit}" if limit else "")
            out = os.path.join(self.work_dir, name + ".jsonl")
            run_tool([self.sst2dynb, trees, "--hdim", str(hdim), "-o", out]
                     + (["--limit", str(limit)] if limit else []),
                     os.path.join(self.work_dir, f"sst2dynb-{name}.log"))
            self.converted[key] = out
        return self.converted[key]

    def dynbc_call(self, call):
        """Runs one planned call; returns (argv, wall seconds, dynbc's per-strategy results)."""
        graphs = self.graphs(call["split"], call["hdim"])
        name = (os.path.basename(graphs)[:-len(".jsonl")]
                + f"-b{call['batch']}-{'+'.join(call['strategies'])}"
                + ("-stream" if call.get("stream") else ""))
        report = os.path.join(self.work_dir, name + ".json")
        argv = [self.dynbc, "run", graphs, "--seed", str(SEED),
                "--strategy=" + ",".join(call["strategies"]),
                "--batch-size", str(call["batch"]), "--repeat", str(call["repeat"]),
                "--profile", "--report", report]
        if call.get("stream"):
            argv.append("--stream")
        if self.threads:
            argv += ["--threads", str(self.threads)]
        if os.path.exists(report):
            os.remove(report)
        wall = run_tool(argv, os.path.join(self.work_dir, name + ".log"))
        try:
            with open(report) as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError) as e:
            raise BenchError(f"dynbc wrote no usable report {report}: {e}")
        got = [r.get("strategy") for r in results]
        if got != call["strategies"]:
            raise BenchError(f"{report}: expected strategies {call['strategies']}, got {got}")
        return argv, wall, results


# ---------------------------------------------------------------- figures

def derive(call, raw):
    """The reported figures of one strategy's dynbc result."""
    passes = raw["run_seconds"]
    if not passes or raw["run_seconds_median"] <= 0:
        raise BenchError(f"dynbc reported no timed pass for {raw['strategy']}")
    median = raw["run_seconds_median"]
    timed = sum(passes)
    instances = raw["instances"]
    gemm, kernel, gather = raw["gemm_seconds"], raw["kernel_seconds"], raw["gather_seconds"]
    return {
        "kind": call["kind"], "split": call["split"], "hdim": call["hdim"],
        "batch": call["batch"], "strategy": raw["strategy"], "repeat": len(passes),
        "instances": instances, "nodes": raw["nodes"], "batches": raw["batches"],
        "median_pass_seconds": median,
        "trees_per_second": instances / median,
        "nodes_per_second": raw["nodes"] / median,
        "launches": raw["launches"], "lower_bound": raw["lower_bound"],
        "launches_over_bound": raw["launches"] / raw["lower_bound"] if raw["lower_bound"] else None,
        "jit_seconds": raw["jit_seconds"], "modules_compiled": raw["modules_compiled"],
        "schedule_ms_per_tree": raw["schedule_seconds"] * 1e3 / instances,
        "plan_ms_per_tree": raw["plan_seconds"] * 1e3 / instances,
        "gemm_gflops_per_second": raw["gemm_flops"] / gemm * 1e-9 if gemm > 0 else None,
        "gemm_share": gemm / timed,
        "kernel_share": kernel / timed,
        "gather_share": gather / timed,
        "other_share": (timed - gemm - kernel - gather) / timed,
        # The median pass with everything but its GEMM share taken out.
        "gemm_only_trees_per_second": instances / (median * gemm / timed) if gemm > 0 else None,
        "arena_bytes": raw["arena_bytes"], "peak_rss_bytes": raw["peak_rss_bytes"],
    }


def find_row(rows, hdim, batch, strategy):
    return next((r for r in rows if (r["hdim"], r["batch"], r["strategy"]) == (hdim, batch, strategy)),
                None)


def add_speedups(rows):
    """Each row's trees/s over that of `none` at the same hdim, batch and data."""
    for r in rows:
        base = next((b for b in rows if b["strategy"] == "none" and b["kind"] == r["kind"]
                     and (b["hdim"], b["batch"]) == (r["hdim"], r["batch"])), None)
        r["speedup_over_none"] = r["trees_per_second"] / base["trees_per_second"] if base else None


def memory_check(row, raw):
    """Peak RSS and whether resident memory keeps growing once the arena has its size."""
    rss = raw["rss_after_batch_bytes"]
    # dynbc keeps every batch's outputs (one root h per tree) during the warm-up pass.
    output_bytes_per_batch = MEMORY_BATCH * row["hdim"] * 4
    result = {"batches": len(rss), "peak_rss_bytes": raw["peak_rss_bytes"],
              "arena_bytes": raw["arena_bytes"], "rss_after_batch_bytes": rss,
              "trees_per_second": row["trees_per_second"]}
    if len(rss) < MEMORY_EARLY.stop + MEMORY_LATE_COUNT:
        result.update(verdict="too few batches to compare", growth=None)
        return result
    early = statistics.mean(rss[MEMORY_EARLY])
    late = statistics.mean(rss[-MEMORY_LATE_COUNT:])
    growth = late / early - 1
    batches_apart = (len(rss) - MEMORY_LATE_COUNT / 2) - (MEMORY_EARLY.start + MEMORY_EARLY.stop) / 2
    result.update(early_mean_bytes=early, late_mean_bytes=late, growth=growth,
                  kept_outputs_growth_bytes=batches_apart * output_bytes_per_batch,
                  verdict="GROWS" if growth > MEMORY_GROWTH_LIMIT else "flat")
    return result


def scale_row(row, raw):
    """Throughput, peak resident memory and its floor for one scale run.

    Memory is counted from the resident size at dynbc's start (its libraries
    loaded, nothing read), so the floor is compared with what the work
    added. The parts in between say where the rest goes (for a streamed run,
    'graphs' is the model alone and 'plans+JIT' the first batch's). The
    anonymous part leaves out the libraries' code pages that running touches
    (LLVM's, oneDNN's): it is what the run allocated."""
    floor = raw["param_bytes"] + raw["peak_live_bytes"] + raw["output_bytes"]
    used = raw["peak_rss_bytes"] - raw["rss_start_bytes"]
    anon_used = raw["rss_anon_peak_sampled_bytes"] - raw["rss_anon_start_bytes"]
    return {"split": row["split"], "input": "streamed" if raw.get("streamed") else "whole",
            "instances": row["instances"], "nodes": row["nodes"],
            "batch": row["batch"], "hdim": row["hdim"], "strategy": row["strategy"],
            "trees_per_second": row["trees_per_second"],
            "peak_rss_bytes": raw["peak_rss_bytes"], "rss_start_bytes": raw["rss_start_bytes"],
            "graphs_bytes": raw["rss_after_load_bytes"] - raw["rss_start_bytes"],
            "plans_bytes": raw["rss_after_plans_bytes"] - raw["rss_after_load_bytes"],
            "run_bytes": raw["peak_rss_bytes"] - raw["rss_after_plans_bytes"],
            "param_bytes": raw["param_bytes"], "peak_live_bytes": raw["peak_live_bytes"],
            "output_bytes": raw["output_bytes"], "arena_bytes": raw["arena_bytes"],
            "floor_bytes": floor, "used_bytes": used,
            "over_floor": used / floor if floor > 0 else None,
            "anon_used_bytes": anon_used,
            "anon_over_floor": anon_used / floor if floor > 0 else None}


SCALE_COLUMNS = [
    ("input", "input", "{}"), ("split", "split", "{}"), ("trees", "instances", "{:,}"),
    ("trees/s", "trees_per_second", "{:,.0f}"),
    ("peak RSS MiB", "peak_rss_bytes", "mib"), ("at start", "rss_start_bytes", "mib"),
    ("graphs", "graphs_bytes", "mib"), ("plans+JIT", "plans_bytes", "mib"), ("run", "run_bytes", "mib"),
    ("floor MiB", "floor_bytes", "mib"), ("params", "param_bytes", "mib"),
    ("live acts", "peak_live_bytes", "mib"), ("outputs", "output_bytes", "mib"),
    ("arena", "arena_bytes", "mib"), ("used/floor", "over_floor", "{:.1f}x"),
    ("anon used", "anon_used_bytes", "mib"), ("anon/floor", "anon_over_floor", "{:.2f}x"),
]
SCALE_COLUMNS_TEXT = [title for title, _, _ in SCALE_COLUMNS]


def scale_cells(scale):
    def cell(r, key, spec):
        v = r[key]
        if v is None:
            return "-"
        return f"{v / 2**20:.1f}" if spec == "mib" else spec.format(v)
    return [[cell(r, key, spec) for _, key, spec in SCALE_COLUMNS] for r in scale]


def scale_lines(scale):
    lines = []
    for mode in SCALE_INPUTS:
        rows = [r for r in scale if r["input"] == mode]
        if len(rows) < 2:
            continue
        small, big = rows[0], rows[-1]
        work = big["instances"] / small["instances"]

        def verdict(x):
            return "met" if x is not None and x <= SCALE_FLOOR_TARGET else "NOT met"
        lines.append(
            f"scale, {mode} input, {SCALE_STRATEGY} hdim {SCALE_HDIM} batch {SCALE_BATCH}: "
            f"{work:.1f}x the trees ({small['split']} -> {big['split']}) runs at "
            f"{big['trees_per_second'] / small['trees_per_second']:.2f}x the trees/s; peak RSS "
            f"{small['peak_rss_bytes'] / 2**20:.0f} -> {big['peak_rss_bytes'] / 2**20:.0f} MiB; "
            f"memory used over the start is {big['over_floor']:.2f}x its floor "
            f"({big['used_bytes'] / 2**20:.0f} of {big['floor_bytes'] / 2**20:.0f} MiB: parameters, "
            f"live activations, outputs; target {SCALE_FLOOR_TARGET}x: {verdict(big['over_floor'])}), "
            f"anonymous memory alone {big['anon_over_floor']:.2f}x ({verdict(big['anon_over_floor'])})")
    return lines


# ---------------------------------------------------------------- formatting

def fmt_int(x):
    return "-" if x is None else f"{x:,.0f}"


def fmt_opt(x, spec):
    return "-" if x is None else format(x, spec)


def pct(x):
    return f"{100 * x:.0f}%"


GRID_COLUMNS = ["batch", "strategy", "trees/s", "nodes/s", "x none", "launches", "bound",
                "l/bound", "JIT s", "sched ms/tree", "plan ms/tree", "GEMM GF/s",
                "gemm", "kernels", "gathers", "other", "passes"]


def grid_cells(r):
    return [str(r["batch"]), r["strategy"], fmt_int(r["trees_per_second"]),
            fmt_int(r["nodes_per_second"]), fmt_opt(r["speedup_over_none"], ".1f"),
            fmt_int(r["launches"]), fmt_int(r["lower_bound"]),
            fmt_opt(r["launches_over_bound"], ".2f"),
            f"{r['jit_seconds']:.2f}", f"{r['schedule_ms_per_tree']:.3f}",
            f"{r['plan_ms_per_tree']:.3f}", fmt_opt(r["gemm_gflops_per_second"], ".1f"),
            pct(r["gemm_share"]), pct(r["kernel_share"]), pct(r["gather_share"]),
            pct(r["other_share"]), str(r["repeat"])]


def text_table(headers, rows):
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    left = {0, 1}  # batch and strategy read better left-aligned
    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


def markdown_table(headers, rows):
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i < 2 else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def table_sections(rows):
    """(title, header, cell rows) per hidden size of the grid, then the overhead point."""
    sections = []
    for hdim in sorted({r["hdim"] for r in rows if r["kind"] == "grid"}):
        of_hdim = [r for r in rows if r["kind"] == "grid" and r["hdim"] == hdim]
        sections.append((f"hdim {hdim}, SST dev ({of_hdim[0]['instances']} trees)",
                         [grid_cells(r) for r in of_hdim]))
    overhead = [grid_cells(r) for r in rows if r["kind"] == "overhead"]
    if overhead:
        sections.append((f"overhead point: hdim {OVERHEAD_HDIM}, SST dev", overhead))
    return sections


def gemm_ceiling(build, work_dir, hdim, instances, nodes):
    """The time perfect batching would take: the workload's GEMM FLOPs at
    the rate oneDNN reaches on the same shapes run as one large static batch
    (M = 4096), measured now by dynb-gemm-ceiling. SST trees have L leaves
    and L - 1 internal nodes: 3L - 1 nodes a tree."""
    tool = os.path.join(build, "bin", "dynb-gemm-ceiling")
    if not os.access(tool, os.X_OK):
        return None
    h = hdim
    shapes = [(4096, h, 3 * h), (4096, 2 * h, 3 * h), (4096, h, h)]
    argv = [tool, "--fixed-m"] + [str(d) for shape in shapes for d in shape]
    log = os.path.join(work_dir, f"gemm-ceiling-h{hdim}.log")
    run_tool(argv, log)
    with open(log) as f:
        rates = [float(line.split(": ")[1].split(" GFLOP/s")[0]) * 1e9
                 for line in f if line.startswith("gemm m=")]
    if len(rates) != 3:
        return None
    leaves = (nodes + instances) / 3
    internals = leaves - instances
    seconds = (leaves * 2 * 3 * h * h / rates[0]
               + internals * (2 * 3 * h * 2 * h / rates[1] + 2 * 2 * h * h / rates[2]))
    return {"hdim": hdim, "rates_gflops": [r / 1e9 for r in rates],
            "shapes_mkn": shapes, "trees_per_second": instances / seconds}


def headline_lines(rows, memory, ceilings=None):
    lines = []
    for hdim, target in TARGETS.items():
        r = find_row(rows, hdim, HEADLINE_BATCH, HEADLINE_STRATEGY)
        if r is None:
            continue
        verdict = "met" if r["trees_per_second"] >= target else "NOT met"
        lines.append(f"{HEADLINE_STRATEGY} hdim {hdim} batch {HEADLINE_BATCH}: "
                     f"{fmt_int(r['trees_per_second'])} trees/s "
                     f"(target {fmt_int(target)}: {verdict})")
        if r.get("speedup_over_none"):
            lines[-1] += f", {r['speedup_over_none']:.1f}x none"
    for hdim in sorted({r["hdim"] for r in rows}):
        r = find_row(rows, hdim, HEADLINE_BATCH, HEADLINE_STRATEGY)
        if r is None or r["gemm_gflops_per_second"] is None:
            continue
        lines.append(f"ceiling, {HEADLINE_STRATEGY} hdim {hdim} batch {HEADLINE_BATCH}: GEMM runs at "
                     f"{r['gemm_gflops_per_second']:.1f} GFLOP/s and is {pct(r['gemm_share'])} of "
                     f"run time; with all else free: {fmt_int(r['gemm_only_trees_per_second'])} trees/s")
    for hdim, c in sorted((ceilings or {}).items()):
        r = find_row(rows, hdim, HEADLINE_BATCH, HEADLINE_STRATEGY)
        if r is None or c is None:
            continue
        rates = ", ".join(f"{m}x{k}x{n} {g:.0f}" for (m, k, n), g in zip(c["shapes_mkn"], c["rates_gflops"]))
        lines.append(f"oneDNN ceiling, hdim {hdim} (static batch GEMMs, GFLOP/s: {rates}): "
                     f"{fmt_int(c['trees_per_second'])} trees/s; {HEADLINE_STRATEGY} batch "
                     f"{HEADLINE_BATCH} reaches {100 * r['trees_per_second'] / c['trees_per_second']:.0f}% of it")
    if memory:
        if memory["growth"] is None:
            lines.append(f"memory: {memory['verdict']}")
        else:
            lines.append(
                f"memory, SST train ({memory['batches']} batches of {MEMORY_BATCH}, {MEMORY_STRATEGY}, "
                f"hdim {MEMORY_HDIM}): peak RSS {memory['peak_rss_bytes'] / 2**20:.1f} MiB, "
                f"arena {memory['arena_bytes'] / 2**20:.1f} MiB; RSS after batches "
                f"{MEMORY_EARLY.start}-{MEMORY_EARLY.stop - 1} {memory['early_mean_bytes'] / 2**20:.1f} MiB, "
                f"last {MEMORY_LATE_COUNT} {memory['late_mean_bytes'] / 2**20:.1f} MiB: "
                f"{100 * memory['growth']:+.2f}% -> {memory['verdict']} "
                f"(limit +{100 * MEMORY_GROWTH_LIMIT:.0f}%; the outputs dynbc keeps account for "
                f"{memory['kept_outputs_growth_bytes'] / 2**20:+.1f} MiB of "
                f"{(memory['late_mean_bytes'] - memory['early_mean_bytes']) / 2**20:+.1f} MiB)")
    return lines


TIMING_NOTE = ("trees/s and nodes/s: instances / median timed pass (one untimed warm-up pass first); "
               "run time excludes parsing, scheduling (sched), plan building (plan) and JIT, shown "
               "apart. JIT is paid by the first strategy of each dynbc call (later ones hit the cache). "
               "gemm/kernels/gathers/other: share of timed run time (--profile).")


# ---------------------------------------------------------------- machine

def machine_info():
    def output(argv):
        try:
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, cwd=ROOT).stdout.strip()
        except OSError:
            return ""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return {
        "nproc": int(output(["nproc"]) or os.cpu_count() or 0),
        "cpu_model": model,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "load_average_at_start": list(os.getloadavg()),
        "cpu_busy_share_before": cpu_busy_share(),
        "git_commit": output(["git", "rev-parse", "HEAD"]),
        "git_dirty": bool(output(["git", "status", "--porcelain", "--untracked-files=no"])),
        # Thread-runtime settings change the figures (OpenMP waiting policy above all).
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(THREADING_ENV_PREFIXES)},
    }


def cpu_busy_share(seconds=1.0):
    """Share of all CPUs' time that was not idle over `seconds` (from /proc/stat), or None."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1 - (idle1 - idle0) / (total1 - total0) if total1 > total0 else None


def file_sha256(path):
    """The file's SHA-256 (None if unreadable), to tell whether a tool was rebuilt during the runs."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def busy_warning(share, when):
    """A warning line when other processes were using the CPUs, else None."""
    if share is None or share < BUSY_CPU_SHARE:
        return None
    return (f"warning: the CPUs were {100 * share:.0f}% busy {when} without this benchmark: "
            f"other processes compete with dynbc, so the figures are low and noisy")


# ---------------------------------------------------------------- main

def describe(call):
    return (f"{call['split']} hdim {call['hdim']:>3} batch {call['batch']:>3} "
            f"{','.join(call['strategies']):<17} x{call['repeat']}"
            + (" streamed" if call.get("stream") else ""))


def reproduce_command(args):
    cmd = [os.path.join(ROOT, "bench", "run.sh"), os.path.abspath(args.build), "treelstm"]
    if args.quick:
        cmd.append("--quick")
    if args.out:
        cmd += ["--out", os.path.abspath(args.out)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.trees:
        cmd += ["--trees", str(args.trees)]
    if not args.peers:
        cmd += ["--no-peers"]
    return shlex.join(cmd)


PEER_SCRIPT = os.path.join(ROOT, "bench", "peers", "treelstm_torch.py")
PEER_CHECK_BATCH = 64
PEER_ATOL = 1e-3


def peer_phase(runner, rows, threads):
    """PyTorch on dynb's own trees and weights: the seeded weights are
    written as safetensors, dynbc (agenda) writes its outputs with them, and
    each peer's outputs are checked against those before its time counts."""
    peer_rows = []
    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import torch, numpy"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise BenchError("the PyTorch peers need Debian's python3-torch and python3-numpy "
                         "(tools/dev deps --bench), or run with --no-peers:\n" + probe.stderr.strip())
    for hdim in sorted({r["hdim"] for r in rows if r["kind"] == "grid"}):
        graphs = runner.graphs("dev", hdim)
        params = os.path.join(runner.work_dir, f"peer-params-h{hdim}.safetensors")
        ref = os.path.join(runner.work_dir, f"peer-dynb-h{hdim}.npy")
        run_tool([python, PEER_SCRIPT, "params", graphs, params, "--seed", str(SEED)],
                 os.path.join(runner.work_dir, f"peer-params-h{hdim}.log"))
        run_tool([runner.dynbc, "run", graphs, "--params", params, "--strategy=agenda",
                  "--batch-size", str(PEER_CHECK_BATCH), "--output", ref],
                 os.path.join(runner.work_dir, f"peer-dynb-h{hdim}.log"))
        batches = sorted({r["batch"] for r in rows if r["kind"] == "grid" and r["hdim"] == hdim})
        runs = [("eager", 1, 1)] + [("level", b, 3) for b in batches]
        for mode, batch, repeat in runs:
            print(f"  pytorch-{mode} hdim {hdim}" + (f" batch {batch}" if mode == "level" else "")
                  + " ...", end=" ", flush=True)
            log = os.path.join(runner.work_dir, f"peer-{mode}-h{hdim}-b{batch}.log")
            argv = [python, PEER_SCRIPT, "run", graphs, params, "--mode", mode,
                    "--batch", str(batch), "--repeat", str(repeat), "--check", ref,
                    "--atol", str(PEER_ATOL)]
            if threads:
                argv += ["--threads", str(threads)]
            wall = run_tool(argv, log)
            with open(log) as f:
                result = json.loads([l for l in f.read().splitlines() if l.startswith("{")][-1])
            print(f"{result['trees_per_second']:,.0f} trees/s ({wall:.0f} s)", flush=True)
            peer_rows.append(dict(result, hdim=hdim, mode=mode, batch=batch, argv=argv))
    return peer_rows


def peer_table(rows, peer_rows):
    """Markdown lines: dynb's strategies against the peers, per hdim and batch."""
    lines = ["| hdim | batch | dynb agenda | dynb none | PyTorch eager | PyTorch by level | "
             "agenda / eager | agenda / by level | peer max abs err |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for hdim in sorted({p["hdim"] for p in peer_rows}):
        eager = next(p for p in peer_rows if p["hdim"] == hdim and p["mode"] == "eager")
        for p in [p for p in peer_rows if p["hdim"] == hdim and p["mode"] == "level"]:
            agenda = find_row(rows, hdim, p["batch"], "agenda")
            none = find_row(rows, hdim, p["batch"], "none")
            a = agenda["trees_per_second"] if agenda else None
            err = max(eager.get("max_abs_error", 0), p.get("max_abs_error", 0))
            lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {:.1e} |".format(
                hdim, p["batch"], fmt_int(a), fmt_int(none["trees_per_second"] if none else None),
                fmt_int(eager["trees_per_second"]), fmt_int(p["trees_per_second"]),
                f"{a / eager['trees_per_second']:.1f}x" if a else "-",
                f"{a / p['trees_per_second']:.1f}x" if a else "-", err))
    return lines


def main(argv):
    args = parse_args(argv)
    build = os.path.abspath(args.build)
    out_dir = os.path.abspath(args.out) if args.out else os.path.join(build, "bench")
    work_dir = os.path.join(build, "bench", "work")
    os.makedirs(work_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    # A quick look or a smoke test never overwrites the full results.
    stem = "treelstm" + ("-quick" if args.quick else "") + (f"-trees{args.trees}" if args.trees else "")

    runner = Runner(build, work_dir, args.threads, args.trees)
    machine = machine_info()
    machine["dynbc_sha256"] = file_sha256(runner.dynbc)
    plan = benchmark_plan(args.quick)
    mode = "".join([" (quick)" if args.quick else "",
                    f" (smoke test: first {args.trees} dev trees)" if args.trees else ""])
    print(f"TreeLSTM benchmark{mode}: {len(plan)} dynbc calls, "
          f"{machine['nproc']} CPUs ({machine['cpu_model']}), "
          f"{100 * (machine['cpu_busy_share_before'] or 0):.0f}% busy before start; work dir {work_dir}", flush=True)

    started = time.monotonic()
    calls, rows, memory, scale = [], [], None, []
    for i, call in enumerate(plan, 1):
        print(f"[{i:>2}/{len(plan)}] {describe(call)} ...", end=" ", flush=True)
        argv, wall, results = runner.dynbc_call(call)
        print(f"{wall:.1f} s", flush=True)
        calls.append(dict(call, argv=argv, wall_seconds=wall, results=results))
        for raw in results:
            row = derive(call, raw)
            if call["kind"] == "memory":
                memory = memory_check(row, raw)
            elif call["kind"] == "scale":
                scale.append(scale_row(row, raw))
            else:
                rows.append(row)
    peer_rows = []
    if args.peers:
        print("PyTorch peers (same trees, same weights, outputs checked against dynb's):", flush=True)
        peer_rows = peer_phase(runner, rows, args.threads)
    total_wall = time.monotonic() - started
    add_speedups(rows)
    machine["load_average_at_end"] = list(os.getloadavg())
    machine["cpu_busy_share_after"] = cpu_busy_share()

    ceilings = {}
    for hdim in sorted({r["hdim"] for r in rows}):
        r = find_row(rows, hdim, HEADLINE_BATCH, HEADLINE_STRATEGY)
        if r is not None:
            print(f"GEMM ceiling at hdim {hdim} ...", flush=True)
            ceilings[hdim] = gemm_ceiling(build, work_dir, hdim, r["instances"], r["nodes"])
    command = reproduce_command(args)
    sections = table_sections(rows)
    headlines = headline_lines(rows, memory, ceilings) + scale_lines(scale)
    for share, when in ((machine["cpu_busy_share_before"], "before the runs"),
                        (machine["cpu_busy_share_after"], "after them")):
        warning = busy_warning(share, when)
        if warning:
            headlines.append(warning)
    if file_sha256(runner.dynbc) != machine["dynbc_sha256"]:
        headlines.append(f"warning: {runner.dynbc} was rebuilt during the runs: "
                         f"the figures mix two builds")

    text = []
    for title, cells in sections:
        text += ["", title, text_table(GRID_COLUMNS, cells)]
    peers_md = peer_table(rows, peer_rows) if peer_rows else []
    if peers_md:
        text += ["", "PyTorch peers (trees/s; eager runs one tree at a time, so one figure an hdim)"] + peers_md
    if scale:
        text += ["", "Scale and memory (one pass each; MiB)",
                 text_table(SCALE_COLUMNS_TEXT, scale_cells(scale))]
    text += ["", TIMING_NOTE, ""] + headlines
    print("\n".join(text))

    md = [f"# TreeLSTM benchmark{mode}", "",
          f"{machine['date']}, {machine['nproc']} CPUs ({machine['cpu_model']}), "
          f"commit {machine['git_commit'][:12]}{' (dirty)' if machine['git_dirty'] else ''}, "
          f"CPUs {100 * (machine['cpu_busy_share_before'] or 0):.0f}% busy before the runs "
          f"and {100 * (machine['cpu_busy_share_after'] or 0):.0f}% after them "
          f"(other processes).", "",
          f"Reproduce: `{command}`"]
    for title, cells in sections:
        md += ["", f"## {title}", "", markdown_table(GRID_COLUMNS, cells)]
    if peers_md:
        md += ["", "## PyTorch peers", "",
               f"PyTorch {peer_rows[0]['torch']} ({peer_rows[0]['threads']} threads), on the same "
               "trees and the same weights (safetensors); each peer's outputs match dynb's "
               f"within {PEER_ATOL} before its time counts. Eager: one tree, one node at a time; "
               "by level: the batch's nodes grouped by height, one set of matrix products a "
               "height (bench/peers/treelstm_torch.py).", ""] + peers_md
    if scale:
        md += ["", "## Scale and memory", "",
               f"{SCALE_STRATEGY}, hdim {SCALE_HDIM}, batch {SCALE_BATCH}, one pass over each split, "
               "reading the whole file first and streamed (`dynbc run --stream`: one batch's graphs "
               "and plan in memory at a time, each batch in an MLIR context of its own). "
               "Resident memory in MiB: at dynbc's start (libraries loaded), then what reading the "
               "graphs, batching and planning (with the JIT), and running added (streamed: the model "
               "alone, then the first batch's plan, then the rest). The floor is the "
               "parameters, the most activations one batch's schedule holds live at once, and every "
               "tree's output; used/floor is (peak - start) / floor. The anonymous columns leave out "
               "the pages of LLVM's and oneDNN's code that running touches (file-backed, shared): "
               "anonymous resident memory, sampled after each batch's plan and first run "
               "(Linux keeps no peak of it), less its value at the start.", "",
               markdown_table(SCALE_COLUMNS_TEXT, scale_cells(scale))]
    md += ["", TIMING_NOTE, "", "## Headline", ""] + [f"- {l}" for l in headlines]

    json_path = os.path.join(out_dir, stem + ".json")
    md_path = os.path.join(out_dir, stem + ".md")
    report = {"benchmark": "treelstm", "quick": args.quick, "command": command,
              "machine": machine, "threads": args.threads, "dev_trees": args.trees or None,
              "seed": SEED,
              "wall_seconds": total_wall, "headlines": headlines, "rows": rows,
              "memory_check": memory, "scale": scale, "gemm_ceilings": ceilings, "peers": peer_rows,
              "calls": calls}
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(md_path, "w") as f:
        f.write("\n".join(md) + "\n")

    print(f"\nwall time {total_wall:.0f} s; wrote {json_path} and {md_path}")
    print(f"reproduce: {command}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print(f"\ntreelstm benchmark: error: {e}", file=sys.stderr)
        sys.exit(1)
