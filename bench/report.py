#!/usr/bin/env python3
# The benchmark report: one JSON of every figure and docs/benchmarks.md with charts, from the workloads' result files.
"""Usage: bench/report.py BENCH_DIR [--docs DIR] [--readme README.md]

Reads the result files the workload benchmarks wrote to BENCH_DIR
(treelstm.json, moe.json, clevr.json, api.json, endtoend.json, train.json, rounds.json; the quick or smoke-test variants are never used,
so a report only shows full runs) and writes:

  BENCH_DIR/report.json        every figure, with each run's machine and date
  DOCS/benchmarks.md           tables: dynb against its `none` strategy, the
                               PyTorch peers and the ceilings, per workload
  DOCS/benchmarks/*.png        the charts (matplotlib)

and, with --readme, replaces the README's headline table (between the
'<!-- bench:headline -->' markers) with the one of this report, so every
figure there comes from the same runs. Workloads without a result file are
listed as not run.
"""

import argparse
import json
import os
import sys

WORKLOADS = ("treelstm", "moe", "clevr", "api", "endtoend", "train", "rounds")


# A workload's section title and headline name in docs/benchmarks.md: a
# workload without results in BENCH_DIR keeps what the last report said.
SECTION_TITLES = {"treelstm": "## TreeLSTM", "moe": "## Mixture of experts",
                  "clevr": "## CLEVR module network", "api": "## Embedded API",
                  "endtoend": "## End to end", "train": "## Training",
                  "rounds": "## Builders that read values"}
HEADLINE_NAMES = {"treelstm": "TreeLSTM", "moe": "Mixture of experts", "clevr": "CLEVR"}


def earlier_report(path):
    """The sections ({workload: lines}) and run-only headline rows
    ({workload: [row]}) of an existing docs/benchmarks.md."""
    sections, rows = {}, {}
    if not os.path.exists(path):
        return sections, rows
    with open(path) as f:
        lines = f.read().splitlines()
    current, table_done = None, False
    for line in lines:
        if line.startswith("## "):
            current = next((w for w, t in SECTION_TITLES.items() if line.startswith(t)), None)
            if line.startswith("## Headline"):
                current, table_done = "headline", False
            if current and current != "headline":
                sections[current] = []
        if current and current != "headline":
            sections[current].append(line)
        elif current == "headline" and not table_done:
            # The run-only table first; the end-to-end table after it is
            # kept whole, for a report without endtoend.json.
            if line.startswith("| "):
                name = line[2:].split(" | ")[0]
                for w, n in HEADLINE_NAMES.items():
                    if name.startswith(n):
                        rows.setdefault(w, []).append(line)
            elif rows and not line.strip():
                table_done = True
        elif current == "headline" and line.startswith("|"):
            rows.setdefault("endtoend-table", []).append(line)
    return sections, rows


def load(bench_dir):
    found = {}
    for w in WORKLOADS:
        path = os.path.join(bench_dir, w + ".json")
        if os.path.exists(path):
            with open(path) as f:
                found[w] = json.load(f)
    return found


def rate(v):
    return "-" if v is None else "{:,.0f}".format(v)


def ratio(a, b):
    return "-" if not a or not b else "{:.1f}x".format(a / b)


def pct(v):
    return "-" if v is None else "{:.0f}%".format(100 * v)


# ------------------------------------------------------------------ TreeLSTM

def treelstm_rows(d, strategy, hdim):
    return sorted((r for r in d["rows"] if r["kind"] == "grid" and r["hdim"] == hdim
                   and r["strategy"] == strategy), key=lambda r: r["batch"])


def treelstm_peer(d, hdim, mode, batch=None):
    for p in d.get("peers", []):
        if p["hdim"] == hdim and p["mode"] == mode and (batch is None or p["batch"] == batch):
            return p
    return None


def treelstm_headline(d):
    """(workload, setting, dynb, eager, by-hand, ceiling) at hdim 256, batch 64."""
    hdim, batch = 256, 64
    agenda = next((r for r in treelstm_rows(d, "agenda", hdim) if r["batch"] == batch), None)
    if agenda is None:
        return None
    eager = treelstm_peer(d, hdim, "eager")
    level = treelstm_peer(d, hdim, "level", batch)
    ceil = d.get("gemm_ceilings", {}).get(str(hdim), {}).get("trees_per_second")
    return dict(workload="TreeLSTM, SST dev", setting="hdim 256, batch 64, agenda",
                unit="trees/s", dynb=agenda["trees_per_second"],
                none=next((r["trees_per_second"] for r in treelstm_rows(d, "none", hdim)
                           if r["batch"] == batch), None),
                eager=eager and eager["trees_per_second"],
                by_hand=level and level["trees_per_second"], ceiling=ceil)


def treelstm_section(d, charts, plt):
    lines = ["## TreeLSTM (SST dev, docs/workloads.md §1)", "",
             "Run: `%s` (%s, commit %s)." % (d["command"], d["machine"]["date"][:16],
                                             d["machine"]["git_commit"][:12]), ""]
    hdims = sorted({r["hdim"] for r in d["rows"] if r["kind"] == "grid"})
    for hdim in hdims:
        ceil = d.get("gemm_ceilings", {}).get(str(hdim), {}).get("trees_per_second")
        eager = treelstm_peer(d, hdim, "eager")
        lines += ["### hdim %d" % hdim, "",
                  "| batch | none | depth | agenda | PyTorch by level | agenda / by level | "
                  "agenda of ceiling | launches (agenda) / bound | JIT s | run s a pass |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for a in treelstm_rows(d, "agenda", hdim):
            b = a["batch"]
            none = next((r for r in treelstm_rows(d, "none", hdim) if r["batch"] == b), None)
            depth = next((r for r in treelstm_rows(d, "depth", hdim) if r["batch"] == b), None)
            level = treelstm_peer(d, hdim, "level", b)
            lines.append("| %d | %s | %s | %s | %s | %s | %s | %d / %d | %.2f | %.3f |" % (
                b, rate(none and none["trees_per_second"]), rate(depth and depth["trees_per_second"]),
                rate(a["trees_per_second"]), rate(level and level["trees_per_second"]),
                ratio(a["trees_per_second"], level and level["trees_per_second"]),
                pct(a["trees_per_second"] / ceil if ceil else None), a["launches"],
                a["lower_bound"], max(r["jit_seconds"] for r in (none, depth, a) if r),
                a["median_pass_seconds"]))
        lines += ["", "PyTorch eager (one tree at a time): %s trees/s; the ceiling (oneDNN on "
                  "the workload's GEMMs as one static batch): %s trees/s." % (
                      rate(eager and eager["trees_per_second"]), rate(ceil)), ""]
    if plt:
        fig, axes = plt.subplots(1, len(hdims), figsize=(5.5 * len(hdims), 4), squeeze=False)
        for ax, hdim in zip(axes[0], hdims):
            for s, style in (("none", "o:"), ("depth", "s--"), ("agenda", "D-")):
                rows = treelstm_rows(d, s, hdim)
                ax.plot([r["batch"] for r in rows], [r["trees_per_second"] for r in rows], style,
                        label="dynb " + s)
            peers = sorted((p for p in d.get("peers", []) if p["hdim"] == hdim and p["mode"] == "level"),
                           key=lambda p: p["batch"])
            if peers:
                ax.plot([p["batch"] for p in peers], [p["trees_per_second"] for p in peers], "x-",
                        label="PyTorch by level")
            eager = treelstm_peer(d, hdim, "eager")
            if eager:
                ax.axhline(eager["trees_per_second"], color="grey", ls="-.", label="PyTorch eager")
            ceil = d.get("gemm_ceilings", {}).get(str(hdim), {}).get("trees_per_second")
            if ceil:
                ax.axhline(ceil, color="black", lw=0.8, label="GEMM ceiling")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("batch size (trees)")
            ax.set_ylabel("trees/s")
            ax.set_title("TreeLSTM, hdim %d" % hdim)
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize=8)
        charts.append(save(plt, fig, "treelstm-throughput.png"))
        lines += ["![TreeLSTM throughput against batch size](benchmarks/treelstm-throughput.png)", ""]

        fig, ax = plt.subplots(figsize=(6, 4))
        for hdim in hdims:
            rows = treelstm_rows(d, "agenda", hdim)
            ax.plot([r["batch"] for r in rows], [r["launches"] / r["lower_bound"] for r in rows],
                    "D-", label="agenda, hdim %d" % hdim)
            rows = treelstm_rows(d, "none", hdim)
            ax.plot([r["batch"] for r in rows], [r["launches"] / r["lower_bound"] for r in rows],
                    "o:", label="none, hdim %d" % hdim)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size (trees)")
        ax.set_ylabel("launches / lower bound")
        ax.set_title("TreeLSTM launches against the lower bound")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        charts.append(save(plt, fig, "treelstm-launches.png"))

        fig, ax = plt.subplots(figsize=(6, 4))
        rows = [r for r in d["rows"] if r["kind"] == "grid" and r["strategy"] == "agenda"]
        labels = ["h%d b%d" % (r["hdim"], r["batch"]) for r in rows]
        ax.bar([i - 0.2 for i in range(len(rows))], [r["median_pass_seconds"] for r in rows], 0.4,
               label="run, one pass over SST dev")
        jit = [max(x["jit_seconds"] for x in d["rows"] if x["kind"] == "grid" and x["hdim"] == r["hdim"])
               for r in rows]
        ax.bar([i + 0.2 for i in range(len(rows))], jit, 0.4, label="JIT (once a process)")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels, rotation=45, fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_title("TreeLSTM (agenda): JIT against run time")
        ax.legend(fontsize=8)
        fig.tight_layout()
        charts.append(save(plt, fig, "treelstm-jit.png"))
        lines += ["![launches against the lower bound](benchmarks/treelstm-launches.png)",
                  "![JIT against run time](benchmarks/treelstm-jit.png)", ""]
    if d.get("memory_check"):
        m = d["memory_check"]
        lines += ["Memory (all of SST train in batches of 64, agenda, hdim 256): " +
                  ", ".join("%s %s" % (k, v) for k, v in m.items() if not isinstance(v, (list, dict))), ""]
    if d.get("scale"):
        lines += ["### Scale and memory", "",
                  "The dev set and all of train (agenda, hdim 256, batch 256, one pass each), "
                  "reading the whole file first and streamed (`dynbc run --stream`: one batch's "
                  "graphs and plan at a time). MiB of resident memory: peak, at dynbc's start, and "
                  "what reading the graphs, planning (with the JIT) and running added; the floor is "
                  "the parameters, the activations one batch holds live at once and every tree's "
                  "output. 'anon' is anonymous memory only (without the library code pages that "
                  "running touches), sampled after each batch.", "",
                  "| input | split | trees | trees/s | peak RSS | at start | graphs | plans + JIT "
                  "| run | floor | used / floor | anon used | anon / floor |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in d["scale"]:
            def times(x):
                return "-" if x is None else "%.2fx" % x
            lines.append("| %s | %s | %d | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s "
                         "| %s | %s |" % (
                r.get("input", "whole"), r["split"], r["instances"], rate(r["trees_per_second"]),
                *(r[k] / 2**20 for k in ("peak_rss_bytes", "rss_start_bytes", "graphs_bytes",
                                         "plans_bytes", "run_bytes", "floor_bytes")),
                times(r["over_floor"]),
                "-" if r.get("anon_used_bytes") is None else "%.0f" % (r["anon_used_bytes"] / 2**20),
                times(r.get("anon_over_floor"))))
        lines.append("")
    lines += ["Headlines of that run:", ""] + ["- " + h for h in d.get("headlines", [])] + [""]
    return lines


# ------------------------------------------------------------------ MoE

def moe_headline(d):
    pts = [p for p in d["points"] if p["grid"] == "lm" and "skipped" not in p
           and p["experts"] == 32 and p["tokens"] == 8192]
    if not pts:
        return None
    p = pts[0]
    peers = p.get("peers", {})
    return dict(workload="Mixture of experts, LM", setting="d 512, h 1024, k 4, 32 experts, "
                "8192 tokens, " + p["best"], unit="tokens/s",
                dynb=p["strategies"][p["best"]]["tokens_per_second"],
                none=p["strategies"]["none"]["tokens_per_second"],
                eager=peers.get("eager", {}).get("tokens_per_second"),
                by_hand=peers.get("grouped", {}).get("tokens_per_second"),
                ceiling=p["dense"]["tokens_per_second"])


def moe_section(d, charts, plt):
    lines = ["## Mixture of experts (docs/workloads.md §3)", "",
             "Run: `tools/dev bench moe` (%s). Ceiling: one dense GEMM of the layer's FLOPs, "
             "timed in the same run." % d["date"], ""]
    for grid in ("seed", "lm"):
        pts = [p for p in d["points"] if p["grid"] == grid]
        if not pts:
            continue
        lines += ["### %s grid (d %d, hidden %d, k %d)" % (grid, pts[0]["d"], pts[0]["hidden"], pts[0]["k"]), "",
                  "| experts | tokens | tok/expert | none | best batched | × none | PyTorch eager | "
                  "PyTorch grouped | best / grouped | of dense GEMM |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in pts:
            if "skipped" in p:
                lines.append("| %d | %d | | | skipped: %s | | | | | |" % (p["experts"], p["tokens"], p["skipped"]))
                continue
            best = p["strategies"][p["best"]]["tokens_per_second"]
            peers = p.get("peers", {})
            g = peers.get("grouped", {}).get("tokens_per_second")
            lines.append("| %d | %d | %.1f | %s | %s (%s) | %.1fx | %s | %s | %s | %s |" % (
                p["experts"], p["tokens"], p["tokens_per_expert"],
                rate(p["strategies"]["none"]["tokens_per_second"]), rate(best), p["best"],
                p["speedup_over_none"], rate(peers.get("eager", {}).get("tokens_per_second")),
                rate(g), ratio(best, g), pct(p["ratio_to_dense"])))
        lines.append("")
    if plt:
        fig, ax = plt.subplots(figsize=(6, 4))
        for grid, style in (("seed", "o"), ("lm", "D")):
            pts = [p for p in d["points"] if p["grid"] == grid and "skipped" not in p]
            ax.scatter([p["tokens_per_expert"] for p in pts], [p["ratio_to_dense"] for p in pts],
                       marker=style, label="%s grid" % grid)
        ax.axhline(0.85, color="black", lw=0.8, ls="--", label="target 85%")
        ax.axvline(64, color="grey", lw=0.8, ls=":", label="64 tokens an expert")
        ax.set_xscale("log")
        ax.set_xlabel("tokens per expert")
        ax.set_ylabel("fraction of the dense GEMM")
        ax.set_title("MoE: best batched strategy against the ceiling")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        charts.append(save(plt, fig, "moe-ceiling.png"))
        lines += ["![MoE against the dense GEMM](benchmarks/moe-ceiling.png)", ""]
    return lines


# ------------------------------------------------------------------ output

OUT_DIR = None


def save(plt, fig, name):
    fig.tight_layout()
    path = os.path.join(OUT_DIR, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ CLEVR

def clevr_peer(d, point, mode, part="whole"):
    """A PyTorch peer's programs/s at this point's batch, where the run has
    one: the whole forward pass or (part 'modules') the modules alone.
    Rows of runs before the modules-alone peers have no 'part': whole."""
    for p in d.get("peers", []):
        if p["mode"] == mode and p["batch"] == point["batch"] and p.get("part", "whole") == part:
            return p["programs_per_second"]
    return None


def clevr_best(point, key="programs_per_s"):
    return max((s for s in point["strategies"] if s != "none"),
               key=lambda s: point["strategies"][s][key])


def clevr_modules_table(d):
    """Module time alone (dynbc --modules-only against the peers'
    --modules-only): the time the seed paper's ">10x" is on."""
    pts = sorted(d["points"], key=lambda p: p["batch"])
    if not any(clevr_peer(d, p, m, "modules") for p in pts for m in ("eager", "level")):
        return []
    lines = ["Modules alone (from the stem's output to each root's map: `dynbc run --modules-only` "
             "against the peers' `--modules-only`, the roots' maps checked against dynb's; the "
             "seed paper's \">10x\" is on this time), programs/s:", "",
             "| batch | none | depth | agenda | PyTorch eager | PyTorch by level | best / eager "
             "| best / by level | best / none |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in pts:
        s = p["strategies"]
        best = clevr_best(p, "modules_programs_per_s")
        b = s[best]["modules_programs_per_s"]
        eager, level = clevr_peer(d, p, "eager", "modules"), clevr_peer(d, p, "level", "modules")
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            p["batch"], *("%.1f" % s[k]["modules_programs_per_s"] for k in ("none", "depth", "agenda")),
            *("-" if v is None else "%.1f" % v for v in (eager, level)),
            ratio(b, eager), ratio(b, level), ratio(b, s["none"]["modules_programs_per_s"])))
    return lines + [""]


def clevr_headline(d):
    pts = [p for p in d["points"] if p["batch"] == 64]
    if not pts:
        return None
    p = pts[0]
    best = clevr_best(p)
    return dict(workload="CLEVR module network (IEP)", setting="batch 64, whole forward, " + best,
                unit="programs/s", dynb=p["strategies"][best]["programs_per_s"],
                none=p["strategies"]["none"]["programs_per_s"],
                eager=clevr_peer(d, p, "eager"), by_hand=clevr_peer(d, p, "level"),
                ceiling=p["batch"] / p["ceiling_seconds_whole"])


def clevr_section(d, charts, plt):
    lines = ["## CLEVR module network (IEP, docs/workloads.md §2)", "",
             "Run: `tools/dev bench clevr` (generated questions of the nine template families, "
             "seeded parameters and features, module_dim 128, 14x14 maps). Ceiling: the batch's "
             "convolutions and dense layers run by oneDNN as one static batch each, timed in the "
             "same run. The first table is the whole forward pass (programs/s); the second, where "
             "the run has it, the program modules alone, for dynb and the PyTorch peers alike.",
             "",
             "| batch | none | depth | agenda | PyTorch eager | PyTorch by level | best / by level "
             "| best of ceiling | modules alone: best / none | launches (agenda) / bound |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted(d["points"], key=lambda p: p["batch"]):
        s = p["strategies"]
        best = clevr_best(p)
        level = clevr_peer(d, p, "level")
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d |" % (
            p["batch"], *("%.1f" % s[k]["programs_per_s"] for k in ("none", "depth", "agenda")),
            *("-" if v is None else "%.1f" % v for v in (clevr_peer(d, p, "eager"), level)),
            ratio(s[best]["programs_per_s"], level), pct(s[best]["of_ceiling"]),
            ratio(s[best]["modules_programs_per_s"], s["none"]["modules_programs_per_s"]),
            s["agenda"]["launches"], s["agenda"]["lower_bound"]))
    lines.append("")
    lines += clevr_modules_table(d)
    if plt:
        fig, ax = plt.subplots(figsize=(6, 4))
        pts = sorted(d["points"], key=lambda p: p["batch"])
        for st, style in (("none", "o:"), ("depth", "s--"), ("agenda", "D-")):
            ax.plot([p["batch"] for p in pts], [p["strategies"][st]["programs_per_s"] for p in pts],
                    style, label="dynb " + st)
        for mode, style in (("eager", "x-."), ("level", "x-")):
            ys = [clevr_peer(d, p, mode) for p in pts]
            if all(ys):
                ax.plot([p["batch"] for p in pts], ys, style, label="PyTorch " + mode)
        ax.plot([p["batch"] for p in pts], [p["batch"] / p["ceiling_seconds_whole"] for p in pts],
                "k-", lw=0.8, label="convolution ceiling")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size (questions)")
        ax.set_ylabel("programs/s")
        ax.set_title("CLEVR module network, whole forward pass")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        charts.append(save(plt, fig, "clevr-throughput.png"))
        lines += ["![CLEVR throughput against batch size](benchmarks/clevr-throughput.png)", ""]
    return lines


# ------------------------------------------------------------------ embedded API

def api_section(d):
    lines = ["## Embedded API (SST trees built per batch through `dynb::Engine`)", "",
             "Run: `tools/dev bench api` (batch %d, best of %d rounds). The API's figure covers "
             "building every graph, scheduling, plan assembly, running and reading the outputs; "
             "dynbc's run-only figure excludes its batching pass and plan building." % (
                 d["batch"], d["rounds"]), "",
             "| hdim | strategy | API trees/s | µs a node outside the executor | dynbc trees/s (run only) "
             "| API / dynbc run |", "|---:|---|---:|---:|---:|---:|"]
    for r in d["rows"]:
        lines.append("| %d | %s | %s | %.2f | %s | %.2f |" % (
            r["hdim"], r["strategy"], rate(r["api_trees_per_s"]), r["api_outside_us_per_node"],
            rate(r["cli_run_trees_per_s"]), r["api_over_cli_run"]))
    lines += [""] + ["- " + t for t in d.get("targets", [])] + [""]
    return lines


def rounds_section(d):
    lines = ["## Builders that read values (`dynb::runTasks`, a read at every step)", "",
             "Run: `tools/dev bench rounds` on %s (%s): %d routers of hdim %d, each reading its "
             "score and calling module a or b at every round, agenda. Wall time of `runTasks` "
             "(building, scheduling, planning, running), median of 5 passes after a warm-up. "
             "Each round runs its own nodes only, so the time a round should stay flat." % (
                 d["cpu"], d["date"], d["instances"], d["hdim"]), "",
             "| rounds | runs | nodes | launches | µs a round | µs a node |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in d["rows"]:
        lines.append("| %d | %d | %d | %d | %.1f | %.3f |" % (
            r["rounds"], r["runs"], r["nodes"], r["launches"], r["us_per_round"], r["us_per_node"]))
    lines += ["", "Time a round at %d rounds over %d: %.2fx (1.0: flat)." % (
        d["rows"][-1]["rounds"], d["rows"][0]["rounds"], d["growth"]), ""]
    return lines


# ------------------------------------------------------------------ training

def train_section(d):
    lines = ["## Training (TreeLSTM on SST train, a loss on every node, Adam)", "",
             "Run: `%s` (%s, commit %s, on %s, %s CPUs). dynbc train: agenda, batch %d, the better of epochs "
             "2 and 3 of %d (whole epochs: planning each step, its forward and backward run, "
             "the optimizer's update). The ceiling is the epoch's GEMM FLOPs (forward, and "
             "twice that for the backward) at oneDNN's static-batch rate on the forward's "
             "shapes, measured in the same run. The PyTorch peers train the same trees from "
             "the same weights in the same order with the same optimizer; each one's epoch "
             "loss equals dynbc's (relative difference at most 1e-3) before its time "
             "counts. The eager peer runs a prefix of the trees (its own count)." % (
                 d["command"], d["machine"]["date"][:16], d["machine"]["git_commit"][:12],
                 d["machine"].get("cpu_model", "?"), d["machine"].get("nproc", "?"),
                 d["batch"], d["epochs"]), ""]
    head = ("| hdim | trees | dynb trees/s | plan / run / update s | ceiling trees/s | "
            "dynb / ceiling | run / ceiling | PyTorch by level | PyTorch eager | "
            "dynb / faster peer | peak RSS, 1 and 3 epochs |")
    lines += [head, "|" + "---:|" * (head.count("|") - 1)]
    for r in d["rows"]:
        lvl, eag = r.get("level"), r.get("eager")
        lines.append("| %d | %d | %s | %.2f / %.2f / %.2f | %s | %s | %s | %s | %s | %s | "
                     "%.0f / %.0f MiB |" % (
                         r["hdim"], r["trees"], rate(r["dynb_trees_per_s"]), r["dynb_plan_s"],
                         r["dynb_run_s"], r["dynb_update_s"], rate(r["ceiling_trees_per_s"]),
                         pct(r["dynb_over_ceiling"]), pct(r["dynb_run_over_ceiling"]),
                         rate(lvl["trees_per_second"]) if lvl else "-",
                         "%s (%d trees)" % (rate(eag["trees_per_second"]), eag["trees"])
                         if eag else "-",
                         "%.2fx" % r["dynb_over_best_peer"] if lvl else "-",
                         r["peak_rss_1_epoch"] / 2**20, r["peak_rss_3_epochs"] / 2**20))
    lines += [""]
    return lines


# ------------------------------------------------------------------ end to end

ENDTOEND_HEADLINE_ROWS = (
    ("sst-h8-jsonl-records", "TreeLSTM, SST dev x20", "hdim 8, JSON Lines", "trees/s"),
    ("sst-h256-jsonl-records", "TreeLSTM, SST dev x20", "hdim 256, JSON Lines", "trees/s"),
    ("sst-h256-json-records", "TreeLSTM, SST dev x20", "hdim 256, one .json document",
     "trees/s"),
    ("clevr", "CLEVR module network (IEP)", "256 questions, one batch", "programs/s"),
    ("moe", "Mixture of experts, seed", "100 experts, 10,000 tokens", "tokens/s"),
)


def endtoend_rows(d):
    by = {r["name"]: r for r in d["rows"]}
    for name, workload, setting, unit in ENDTOEND_HEADLINE_ROWS:
        r = by.get(name)
        if r:
            yield r, workload, setting, unit, d["run_only"][r["workload"]]


def endtoend_headline_table(d):
    lines = ["| dynbc, whole process | setting | end to end | run only | end to end / run only "
             "| front end µs a node |", "|---|---|---:|---:|---:|---:|"]
    for r, workload, setting, unit, ro in endtoend_rows(d):
        batch = ", batch 64" if r["workload"].startswith("sst") else ""
        lines.append("| %s | %s%s, agenda | %s %s | %s | %s | %.2f |" % (
            workload, setting, batch, rate(r["instances_per_second"]), unit,
            rate(ro["instances_per_second"]),
            pct(r["instances_per_second"] / ro["instances_per_second"]), r["front_us_per_node"]))
    return lines


def endtoend_section(d):
    m = d.get("machine", {})
    lines = ["## End to end (dynbc as a whole process)", "",
             "Run: `%s` (%s, commit %s) on %s (%s CPUs). Each row is `dynbc run FILE --seed 7 "
             "--strategy=agenda --batch-size 64 --repeat 0 --output OUT.npy` (CLEVR and MoE: "
             "one batch) timed from outside (wall time and peak RSS of the process; rows "
             "through the node records: the median of %s processes); *of run-only* divides by "
             "the median timed "
             "pass of the same input (`--repeat 3`). Front end: reading (parse: indexing the JSON "
             "text; build: node records or the MLIR import, which does not split its parse out), "
             "scheduling and plan assembly, in µs a node. The outputs of every row of an SST "
             "input, and of both MoE rows, are the same bytes." % (
                 d["command"], m.get("date", "?")[:16], (m.get("git_commit") or "?")[:12],
                 m.get("cpu_model", "?"), m.get("nproc", "?"),
                 max((r.get("runs", 1) for r in d["rows"]), default=1)), ""]
    with_table = []
    for r in d["rows"]:
        ro = d["run_only"][r["workload"]]["instances_per_second"]
        form = r["form"] + (" --stream" if r["stream"] else "")
        with_table.append("| %s | %s | %s | %.2f | %s | %s | %.0f | %.3f (%.3f + %.3f + %.3f + %.3f) "
                          "| %.1f%% |" % (
                              r["workload"], form, r["front_end"], r["wall_seconds"],
                              rate(r["instances_per_second"]), pct(r["instances_per_second"] / ro),
                              r["peak_rss_bytes"] / 2**20, r["front_us_per_node"],
                              r["parse_us_per_node"], r["build_us_per_node"],
                              r["schedule_us_per_node"], r["plan_us_per_node"],
                              100 * r["front_share"]))
    lines += ["| input | form | front end | whole process s | instances/s | of run-only "
              "| peak RSS MiB | front end µs/node (parse + build + sched + plan) | front end share |",
              "|---|---|---|---:|---:|---:|---:|---|---:|"] + with_table + [""]
    lines += ["Targets:", ""] + ["- " + t for t in d.get("targets", [])] + [""]
    return lines


def headline_table(heads):
    lines = ["| workload | setting | dynb | × dynb none | × PyTorch eager | × PyTorch by hand | "
             "of ceiling |", "|---|---|---:|---:|---:|---:|---:|"]
    for h in heads:
        lines.append("| %s | %s | %s %s | %s | %s | %s | %s |" % (
            h["workload"], h["setting"], rate(h["dynb"]), h["unit"], ratio(h["dynb"], h["none"]),
            ratio(h["dynb"], h["eager"]), ratio(h["dynb"], h["by_hand"]),
            pct(h["dynb"] / h["ceiling"] if h["ceiling"] else None)))
    return lines


def main(argv):
    global OUT_DIR
    p = argparse.ArgumentParser(prog="bench/report.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bench_dir")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--docs", default=os.path.join(root, "docs"))
    p.add_argument("--readme")
    args = p.parse_args(argv)
    found = load(args.bench_dir)
    if not found:
        print("bench/report.py: no full results in %s (run tools/dev bench first)" % args.bench_dir,
              file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench/report.py: matplotlib is missing (tools/dev deps --bench); no charts",
              file=sys.stderr)
        plt = None
    OUT_DIR = os.path.join(args.docs, "benchmarks")
    os.makedirs(OUT_DIR, exist_ok=True)
    docs_md = os.path.join(args.docs, "benchmarks.md")
    kept_sections, kept_rows = earlier_report(docs_md)
    charts, heads, sections = [], [], {}
    kept = []
    if "treelstm" in found:
        h = treelstm_headline(found["treelstm"])
        heads += [h] if h else []
        sections["treelstm"] = treelstm_section(found["treelstm"], charts, plt)
    if "moe" in found:
        h = moe_headline(found["moe"])
        heads += [h] if h else []
        sections["moe"] = moe_section(found["moe"], charts, plt)
    if "clevr" in found:
        h = clevr_headline(found["clevr"])
        heads += [h] if h else []
        sections["clevr"] = clevr_section(found["clevr"], charts, plt)
    if "api" in found:
        sections["api"] = api_section(found["api"])
    if "endtoend" in found:
        sections["endtoend"] = endtoend_section(found["endtoend"])
    if "train" in found:
        sections["train"] = train_section(found["train"])
    if "rounds" in found:
        sections["rounds"] = rounds_section(found["rounds"])
    # Workloads without results keep the earlier report's section and rows;
    # the sections stay in WORKLOADS order either way.
    body = []
    for w in WORKLOADS:
        if w in sections:
            body += sections[w]
        elif w in kept_sections:
            body += [l for l in kept_sections[w]]
            while body and body[-1] == "":
                body.pop()
            body.append("")
            kept.append(w)
    # The run-only headline, then dynbc end to end beside it.
    headline = headline_table(heads)
    for w in WORKLOADS:
        if w not in found:
            headline += kept_rows.get(w, [])
    if "endtoend" in found:
        headline += [""] + endtoend_headline_table(found["endtoend"])
    elif kept_rows.get("endtoend-table"):
        headline += [""] + kept_rows["endtoend-table"]
    missing = [w for w in WORKLOADS if w not in found and w not in kept]
    machine = next((found[w]["machine"] for w in WORKLOADS
                    if w in found and "machine" in found[w]), {})
    md = ["# Benchmarks", "",
          "Written by `bench/report.py` from the result files of `tools/dev bench` "
          "(do not edit by hand). Machine of this run: %s CPUs (%s); a section kept from an "
          "earlier run names that run. dynb's figures are the median "
          "timed pass after a warm-up pass; the PyTorch peers run on the same inputs "
          "and weights and their outputs match dynb's before their time counts "
          "(bench/README.md)." % (machine.get("nproc", "?"), machine.get("cpu_model", "?")), "",
          "## Headline", ""] + headline + [""]
    if kept:
        md += ["Kept from an earlier report (no results in this run): %s; their sections "
               "name the run they come from." % ", ".join(kept), ""]
    if missing:
        md += ["Not in this report (no full run found): %s." % ", ".join(missing), ""]
    md += body
    # Commands as a user of the repository types them: no machine's paths.
    md = [l.replace(root + "/", "") for l in md]
    with open(os.path.join(args.docs, "benchmarks.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.bench_dir, "report.json"), "w") as f:
        json.dump({"headlines": heads, "results": found}, f, indent=1)
    if args.readme:
        with open(args.readme) as f:
            text = f.read()
        start, end = "<!-- bench:headline -->", "<!-- /bench:headline -->"
        if start in text and end in text:
            a, b = text.index(start) + len(start), text.index(end)
            text = text[:a] + "\n" + "\n".join(headline) + "\n" + text[b:]
            with open(args.readme, "w") as f:
                f.write(text)
        else:
            print("bench/report.py: %s has no %s ... %s markers; not changed" % (args.readme, start, end),
                  file=sys.stderr)
    print("wrote %s, %d charts, and %s" % (os.path.join(args.docs, "benchmarks.md"), len(charts),
                                           os.path.join(args.bench_dir, "report.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
