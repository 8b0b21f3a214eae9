#!/usr/bin/env python3
# Embedded API benchmark: SST trees built and run through dynb::Engine, against dynbc on the same trees.
"""Usage: bench/api.py BUILD_DIR [--quick] [--out DIR] [--threads N] [--trees N] [--rounds N]

For hdim 8 (where the time is overhead) and 256, at batch 64, runs the SST
dev trees through BUILD_DIR/bin/dynb-api-bench (every batch's graphs built
through Instance handles, scheduled, assembled and run per pass) and through
`dynbc run` on the same trees, strategy and seed, alternating the two
`--rounds` times and keeping each one's best pass (other work on the machine
only ever slows a pass down). Prints a table and writes api.json and api.md
to BUILD_DIR/bench (or --out DIR). Targets: hdim 8 >= 40,000 trees/s;
hdim 256 within 5% of dynbc's run-only figure. See bench/README.md.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST_DEV = os.path.join(ROOT, "examples", "treelstm", "data", "sst", "dev.txt")
SEED = 1
BATCH = 64
TARGET_TREES_PER_S_HDIM8 = 40_000
TARGET_CLI_SHARE_HDIM256 = 0.95


class BenchError(Exception):
    """A step failed; the message says which and why."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/api.py", description=__doc__.splitlines()[2])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--quick", action="store_true", help="one round, agenda only")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--trees", type=int, default=0, help="first N dev trees (default all 1101)")
    p.add_argument("--rounds", type=int, default=2)
    # bench/run.sh passes every workload's options to each: ignore the others'.
    args, _ = p.parse_known_args(argv)
    return args


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def main(argv):
    args = parse_args(argv)
    bin_dir = os.path.join(args.build, "bin")
    out_dir = args.out or os.path.join(args.build, "bench")
    os.makedirs(out_dir, exist_ok=True)
    for tool in ("sst2dynb", "dynbc", "dynb-api-bench"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            raise BenchError(f"{bin_dir}/{tool} is missing: run tools/dev build")
    strategies = ("agenda",) if args.quick else ("agenda", "depth")
    rounds = 1 if args.quick else max(1, args.rounds)
    limit = ["--limit", str(args.trees)] if args.trees else []
    rows = []
    for hdim in (8, 256):
        graphs = os.path.join(out_dir, f"api-sst-dev-h{hdim}.jsonl")
        run([os.path.join(bin_dir, "sst2dynb"), SST_DEV, "--hdim", str(hdim), "-o", graphs] + limit)
        repeat = 9 if hdim == 8 else 3
        for strategy in strategies:
            best_api, best_cli = None, None
            for _ in range(rounds):
                api = json.loads(run([os.path.join(bin_dir, "dynb-api-bench"), graphs, SST_DEV,
                                      "--seed", str(SEED), "--batch-size", str(BATCH),
                                      "--strategy", strategy, "--repeat", str(repeat),
                                      "--run-threads", str(args.threads)] + limit))
                report = os.path.join(out_dir, f"api-cli-h{hdim}-{strategy}.json")
                run([os.path.join(bin_dir, "dynbc"), "run", graphs, "--seed", str(SEED),
                     f"--strategy={strategy}", "--batch-size", str(BATCH), "--repeat", str(repeat),
                     "--threads", str(args.threads), "--report", report])
                with open(report) as f:
                    cli = json.load(f)["results"][0]
                if best_api is None or api["trees_per_s"] > best_api["trees_per_s"]:
                    best_api = api
                if best_cli is None or cli["run_seconds_median"] < best_cli["run_seconds_median"]:
                    best_cli = cli
            cli_run = best_cli["run_seconds_median"]
            cli_total = cli_run + best_cli["schedule_seconds"] + best_cli["plan_seconds"]
            n = best_cli["instances"]
            if n != best_api["trees"] or best_cli["nodes"] != best_api["nodes"]:
                raise BenchError(f"API and dynbc ran different work: {best_api} vs {best_cli}")
            rows.append({
                "hdim": hdim, "batch": BATCH, "strategy": strategy, "trees": n,
                "nodes": best_api["nodes"],
                "api_trees_per_s": best_api["trees_per_s"],
                "api_nodes_per_s": best_api["nodes_per_s"],
                "api_outside_us_per_node": best_api["outside_us_per_node"],
                "api_build_us_per_node": best_api["build_us_per_node"],
                "api_schedule_us_per_node": best_api["schedule_us_per_node"],
                "api_assemble_us_per_node": best_api["assemble_us_per_node"],
                "api_executor_us_per_node": best_api["executor_us_per_node"],
                "cli_run_trees_per_s": n / cli_run,
                "cli_total_trees_per_s": n / cli_total,
                "cli_outside_us_per_node": 1e6 * (cli_total - cli_run) / best_cli["nodes"],
                "api_over_cli_run": best_api["trees_per_s"] * cli_run / n,
                "api_over_cli_total": best_api["trees_per_s"] * cli_total / n,
            })
    lines = ["| hdim | strategy | API trees/s | API nodes/s | API µs/node outside executor "
             "(build + schedule + assemble) | dynbc trees/s run only | dynbc trees/s with "
             "sched + plan | API / dynbc run | API / dynbc total |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['hdim']} | {r['strategy']} | {r['api_trees_per_s']:,.0f} | {r['api_nodes_per_s']:,.0f} "
            f"| {r['api_outside_us_per_node']:.3f} ({r['api_build_us_per_node']:.3f} + "
            f"{r['api_schedule_us_per_node']:.3f} + {r['api_assemble_us_per_node']:.3f}) "
            f"| {r['cli_run_trees_per_s']:,.0f} | {r['cli_total_trees_per_s']:,.0f} "
            f"| {r['api_over_cli_run']:.3f} | {r['api_over_cli_total']:.3f} |")
    targets = []
    for r in rows:
        if r["strategy"] != "agenda":
            continue
        if r["hdim"] == 8:
            ok = r["api_trees_per_s"] >= TARGET_TREES_PER_S_HDIM8
            targets.append(f"hdim 8, batch 64: {r['api_trees_per_s']:,.0f} trees/s "
                           f"(target >= {TARGET_TREES_PER_S_HDIM8:,}): {'met' if ok else 'MISSED'}")
        if r["hdim"] == 256:
            ok = r["api_over_cli_run"] >= TARGET_CLI_SHARE_HDIM256
            targets.append(f"hdim 256, batch 64: API at {r['api_over_cli_run']:.1%} of dynbc's run-only "
                           f"trees/s (target >= 95%): {'met' if ok else 'MISSED'}")
    text = "\n".join(lines + [""] + targets) + "\n"
    print(text)
    with open(os.path.join(out_dir, "api.json"), "w") as f:
        json.dump({"batch": BATCH, "rounds": rounds, "rows": rows, "targets": targets}, f, indent=1)
    with open(os.path.join(out_dir, "api.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print(f"bench/api.py: error: {e}", file=sys.stderr)
        sys.exit(1)
