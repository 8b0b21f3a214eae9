#!/usr/bin/env python3
# End-to-end benchmark: dynbc timed as a whole process (import, schedule, plan, JIT, run, output) beside its run-only figure.
"""Usage: bench/endtoend.py BUILD_DIR [--quick] [--out DIR] [--threads N] [--copies N] [--runs N]

Runs `dynbc run FILE --seed 7 --strategy=agenda --batch-size 64 --repeat 0
--output OUT.npy` as a user would, timing the whole process from outside
(wall time and peak resident memory of the child, as /usr/bin/time reports
them), and beside it the run-only figure of the same input (`--repeat 3`,
median pass). Inputs:

- SST: the dev trees COPIES times over (default 20: 22,020 trees) at hdim 8
  and 256, as JSON Lines (whole file and --stream) and as one .json
  document, through both front ends (`--front-end=auto`: node records;
  `--front-end=mlir`: the importer and the dynb-batch pass);
- CLEVR: 256 generated questions (examples/clevr/clevrgen.py), one batch;
- MoE: 10,000 tokens over 100 experts (d 256, hidden 256, k 1) as an
  interchange document (examples/moe/moegen.py), through both front ends.

Rows through the node records (and CLEVR) keep the median of --runs
whole-process runs (default 3) by wall time; the slow MLIR-path rows run
once. Each row gives the front end's microseconds a node, split into parse
(indexing the JSON text), graph building (decoding into node records, or
the MLIR import), scheduling and plan assembly. Every run shares one kernel
cache, so the rows are warm (modules loaded, as in a user's second run);
rows of --runs processes also time one cold process (--no-cache: every
module compiled). Writes endtoend.json and
endtoend.md to BUILD_DIR/bench (or --out DIR); --quick (hdim 8 only, no
MLIR front end) writes endtoend-quick.*. See bench/README.md.
"""

import argparse
import json
import os
import shutil
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import treelstm  # noqa: E402  (machine_info, cpu_busy_share)

SST_DEV = os.path.join(ROOT, "examples", "treelstm", "data", "sst", "dev.txt")
CLEVR_GEN = os.path.join(ROOT, "examples", "clevr", "clevrgen.py")
MOE_GEN = os.path.join(ROOT, "examples", "moe", "moegen.py")
SEED = 7
BATCH = 64
RUN_ONLY_PASSES = 3
# Targets (bench/README.md, "End to end").
TARGET_HDIM8_TREES_PER_S = 40_000
TARGET_HDIM8_FRONT_US_PER_NODE = 0.3
TARGET_HDIM256_SHARE_OF_RUN_ONLY = 0.85
TARGET_DOCUMENT_SLOWDOWN = 0.10
TARGET_DOCUMENT_RSS_PER_FILE_BYTE = 3
TARGET_FRONT_SHARE = 0.05


class BenchError(Exception):
    """A step failed; the message says which and why."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/endtoend.py", description=__doc__.splitlines()[2])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--quick", action="store_true", help="hdim 8 only, records front end only")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--copies", type=int, default=20, help="copies of the SST dev set (default 20)")
    p.add_argument("--runs", type=int, default=3,
                   help="whole-process runs of each record row, median kept (default 3)")
    # bench/run.sh passes every workload's options to each: ignore the others'.
    args, _ = p.parse_known_args(argv)
    return args


def run_quiet(argv, what):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise BenchError(f"{what} failed ({proc.returncode}): {shlex.join(argv)}\n"
                         f"{proc.stderr[-3000:]}")
    return proc.stdout


def timed_process(argv, log_path):
    """Runs argv; returns (wall seconds, peak resident bytes) of the child,
    measured as /usr/bin/time does (wait4's rusage)."""
    start = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(argv) + "\n")
        log.flush()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        with open(log_path) as log:
            raise BenchError(f"exit {proc.returncode}: {shlex.join(argv)}\n{log.read()[-3000:]}")
    return wall, usage.ru_maxrss * 1024


# ---------------------------------------------------------------- inputs

def sst_inputs(bin_dir, work, hdim, copies):
    """The dev trees `copies` times over at `hdim`, as .jsonl and .json."""
    one = os.path.join(work, f"sst-dev-h{hdim}.jsonl")
    run_quiet([os.path.join(bin_dir, "sst2dynb"), SST_DEV, "--hdim", str(hdim), "-o", one],
              "sst2dynb")
    with open(one) as f:
        header, *instances = [l.rstrip("\n") for l in f if l.strip()]
    lines_path = os.path.join(work, f"sst-dev-x{copies}-h{hdim}.jsonl")
    with open(lines_path, "w") as f:
        f.write(header + "\n")
        for _ in range(copies):
            f.write("\n".join(instances) + "\n")
    # The document: the header's members, then every instance in one list.
    head = json.loads(header)
    doc_path = os.path.join(work, f"sst-dev-x{copies}-h{hdim}.json")
    with open(doc_path, "w") as f:
        f.write('{"dynb":%s,"model":%s,"instances":[' % (
            json.dumps(head["dynb"]), json.dumps(head["model"], separators=(",", ":"))))
        for c in range(copies):
            f.write(("," if c else "") + ",".join(instances))
        f.write("]}\n")
    return lines_path, doc_path, len(instances) * copies


def clevr_input(work):
    path = os.path.join(work, "clevr-q256.json")
    run_quiet([sys.executable, CLEVR_GEN, "-o", path, "--questions", "256", "--seed", "1"],
              "clevrgen")
    return path


def moe_input(work):
    path = os.path.join(work, "moe-e100-t10000.json")
    run_quiet([sys.executable, MOE_GEN, "--tokens", "10000", "--experts", "100", "--k", "1",
               "--d", "256", "--hidden", "256", "-o", path], "moegen")
    return path


# ---------------------------------------------------------------- one row

class Runner:
    def __init__(self, args, work):
        self.dynbc_path = os.path.join(args.build, "bin", "dynbc")
        self.threads = args.threads
        self.work = work
        self.calls = []
        # One kernel cache for the whole benchmark, so that rows are what a
        # user's second run costs; each row also times one cold process
        # (--no-cache), what the first run costs.
        self.cache_dir = os.path.join(work, "kernel-cache")
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def dynbc(self, name, path, extra, batch=True):
        report = os.path.join(self.work, name + ".report.json")
        argv = [self.dynbc_path, "run", path, "--seed", str(SEED), "--strategy=agenda"]
        if batch:
            argv += ["--batch-size", str(BATCH)]
        argv += extra + ["--report", report]
        if "--no-cache" not in extra:
            argv += ["--cache-dir", self.cache_dir]
        if self.threads:
            argv += ["--threads", str(self.threads)]
        wall, rss = timed_process(argv, os.path.join(self.work, name + ".log"))
        with open(report) as f:
            result = json.load(f)["results"][0]
        self.calls.append(dict(name=name, argv=argv[1:], wall_seconds=wall, peak_rss_bytes=rss))
        return wall, rss, result

    def row(self, workload, name, path, front_end, stream=False, batch=True, runs=1):
        """Whole-process runs (the median of `runs` by wall time) and their
        figures."""
        out = os.path.join(self.work, name + ".npy")
        extra = ["--repeat", "0", "--output", out, "--front-end=" + front_end]
        if stream:
            extra.append("--stream")
        print(f"  {name} ...", end=" ", flush=True)
        cold = None
        if runs > 1:
            cold_wall, _, cold_r = self.dynbc(name, path, extra + ["--no-cache"], batch)
            cold = dict(wall_seconds=cold_wall, jit_seconds=cold_r["jit_seconds"],
                        instances_per_second=cold_r["instances"] / cold_wall)
        tries = sorted((self.dynbc(name, path, extra, batch) for _ in range(runs)),
                       key=lambda t: t[0])
        wall, rss, r = tries[len(tries) // 2]
        walls = [t[0] for t in tries]
        nodes = max(r["nodes"], 1)
        read, parse = r["read_seconds"], r["parse_seconds"]
        front = read + r["schedule_seconds"] + r["plan_seconds"]
        row = dict(
            workload=workload, name=name, input=os.path.basename(path),
            form="document" if path.endswith(".json") else "JSON Lines",
            stream=stream, front_end=r["front_end"], instances=r["instances"],
            nodes=r["nodes"], file_bytes=os.path.getsize(path), param_bytes=r["param_bytes"],
            wall_seconds=wall, peak_rss_bytes=rss,
            instances_per_second=r["instances"] / wall,
            read_seconds=read, parse_seconds=parse,
            schedule_seconds=r["schedule_seconds"], plan_seconds=r["plan_seconds"],
            jit_seconds=r["jit_seconds"], run_seconds=r["run_seconds_median"],
            front_seconds=front, front_share=front / wall,
            front_us_per_node=front * 1e6 / nodes,
            parse_us_per_node=parse * 1e6 / nodes,
            build_us_per_node=(read - parse) * 1e6 / nodes,
            schedule_us_per_node=r["schedule_seconds"] * 1e6 / nodes,
            plan_us_per_node=r["plan_seconds"] * 1e6 / nodes,
            launches=r["launches"], lower_bound=r["lower_bound"], output=out,
            runs=runs, wall_seconds_all=walls, cold=cold,
            modules_compiled=r.get("modules_compiled", 0),
            modules_loaded=r.get("modules_loaded", 0))
        print(f"{wall:.2f} s, {row['instances_per_second']:,.0f}/s, "
              f"{rss / 2**20:.0f} MiB, front end {row['front_us_per_node']:.3f} us/node",
              flush=True)
        return row

    def run_only(self, workload, name, path, batch=True):
        """Instances a second over the timed passes (median of three)."""
        wall, _, r = self.dynbc(name, path, ["--repeat", str(RUN_ONLY_PASSES)], batch)
        return dict(workload=workload, input=os.path.basename(path),
                    instances=r["instances"], run_seconds=r["run_seconds_median"],
                    instances_per_second=r["instances"] / r["run_seconds_median"],
                    wall_seconds=wall)


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


# ---------------------------------------------------------------- tables

def fmt_int(x):
    return f"{x:,.0f}"


def cold_cell(r):
    c = r.get("cold")
    return f"{c['wall_seconds']:.2f} ({c['jit_seconds']:.2f})" if c else "-"


def table(rows, run_only):
    lines = ["| workload | input | front end | whole process s | instances/s | of run-only "
             "| peak RSS MiB | front end us/node (parse + build + sched + plan) | front end share "
             "| JIT s | run s | cold process s (JIT s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ro = run_only[r["workload"]]["instances_per_second"]
        form = r["form"] + (" --stream" if r["stream"] else "")
        split = (f"{r['front_us_per_node']:.3f} ({r['parse_us_per_node']:.3f} + "
                 f"{r['build_us_per_node']:.3f} + {r['schedule_us_per_node']:.3f} + "
                 f"{r['plan_us_per_node']:.3f})")
        lines.append(f"| {r['workload']} | {form} | {r['front_end']} | {r['wall_seconds']:.2f} "
                     f"| {fmt_int(r['instances_per_second'])} | {r['instances_per_second'] / ro:.0%} "
                     f"| {r['peak_rss_bytes'] / 2**20:.0f} | {split} | {r['front_share']:.1%} "
                     f"| {r['jit_seconds']:.2f} | {r['run_seconds']:.2f} "
                     f"| {cold_cell(r)} |")
    lines += ["", "| workload | instances | run-only instances/s (median of %d passes) |"
              % RUN_ONLY_PASSES, "|---|---|---|"]
    for w, r in run_only.items():
        lines.append(f"| {w} | {fmt_int(r['instances'])} | {fmt_int(r['instances_per_second'])} |")
    return lines


def verdicts(rows, run_only):
    """Each target, met or not, with the figures behind it."""
    out = []
    by = {r["name"]: r for r in rows}

    def mark(ok):
        return "met" if ok else "NOT MET"

    h8 = by.get("sst-h8-jsonl-records")
    if h8:
        ok = (h8["instances_per_second"] >= TARGET_HDIM8_TREES_PER_S and
              h8["front_us_per_node"] <= TARGET_HDIM8_FRONT_US_PER_NODE)
        out.append(f"SST hdim 8, JSON Lines: {fmt_int(h8['instances_per_second'])} trees/s end to "
                   f"end (target {fmt_int(TARGET_HDIM8_TREES_PER_S)}), front end "
                   f"{h8['front_us_per_node']:.3f} us/node (target "
                   f"{TARGET_HDIM8_FRONT_US_PER_NODE}): {mark(ok)}")
    h256 = by.get("sst-h256-jsonl-records")
    if h256:
        share = h256["instances_per_second"] / run_only["sst-h256"]["instances_per_second"]
        out.append(f"SST hdim 256, JSON Lines: end to end {share:.0%} of run-only (target "
                   f"{TARGET_HDIM256_SHARE_OF_RUN_ONLY:.0%}): "
                   f"{mark(share >= TARGET_HDIM256_SHARE_OF_RUN_ONLY)}")
    for hdim in (8, 256):
        doc, lines = by.get(f"sst-h{hdim}-json-records"), by.get(f"sst-h{hdim}-jsonl-records")
        if doc and lines:
            slower = doc["wall_seconds"] / lines["wall_seconds"] - 1
            limit = TARGET_DOCUMENT_RSS_PER_FILE_BYTE * doc["file_bytes"] + doc["param_bytes"]
            ok = slower <= TARGET_DOCUMENT_SLOWDOWN and doc["peak_rss_bytes"] <= limit
            out.append(f"SST hdim {hdim}, one document: {slower:+.0%} against JSON Lines "
                       f"(target +{TARGET_DOCUMENT_SLOWDOWN:.0%}), peak RSS "
                       f"{doc['peak_rss_bytes'] / 2**20:.0f} MiB (target 3 x file + parameters "
                       f"= {limit / 2**20:.0f} MiB): {mark(ok)}")
    for name in ("clevr", "moe"):
        r = by.get(name)
        if r:
            out.append(f"{name}: front end {r['front_share']:.1%} of the whole process "
                       f"(target under {TARGET_FRONT_SHARE:.0%}): "
                       f"{mark(r['front_share'] < TARGET_FRONT_SHARE)}")
    return out


# ---------------------------------------------------------------- main

def main(argv):
    args = parse_args(argv)
    bin_dir = os.path.join(args.build, "bin")
    for tool in ("dynbc", "sst2dynb"):
        if not os.access(os.path.join(bin_dir, tool), os.X_OK):
            raise BenchError(f"{bin_dir}/{tool} is missing: run tools/dev build")
    out_dir = args.out or os.path.join(args.build, "bench")
    work = os.path.join(out_dir, "work", "endtoend")
    os.makedirs(work, exist_ok=True)
    machine = treelstm.machine_info()
    runner = Runner(args, work)
    rows, run_only, identical = [], {}, {}
    started = time.monotonic()
    hdims = (8,) if args.quick else (8, 256)
    for hdim in hdims:
        lines, doc, trees = sst_inputs(bin_dir, work, hdim, args.copies)
        print(f"SST hdim {hdim}: {trees:,} trees ({os.path.getsize(lines) / 2**20:.0f} MiB)",
              flush=True)
        w = f"sst-h{hdim}"
        run_only[w] = runner.run_only(w, f"{w}-run-only", lines)
        records = [("jsonl", lines, False), ("json", doc, False), ("jsonl-stream", lines, True)]
        for tag, path, stream in records:
            rows.append(runner.row(w, f"{w}-{tag}-records", path, "auto", stream,
                                   runs=args.runs))
        if not args.quick:
            # The importer path, as every run went before node records.
            for tag, path, stream in [("jsonl-stream", lines, True), ("jsonl", lines, False)] + (
                    [("json", doc, False)] if hdim == 256 else []):
                rows.append(runner.row(w, f"{w}-{tag}-mlir", path, "mlir", stream))
        # Both front ends, every form: the same outputs, bit for bit.
        outs = [r["output"] for r in rows if r["workload"] == w]
        identical[w] = all(same_bytes(outs[0], o) for o in outs[1:])
        if not identical[w]:
            raise BenchError(f"{w}: outputs differ between front ends or input forms: {outs}")
    if not args.quick:
        clevr = clevr_input(work)
        print("CLEVR: 256 questions", flush=True)
        run_only["clevr"] = runner.run_only("clevr", "clevr-run-only", clevr, batch=False)
        rows.append(runner.row("clevr", "clevr", clevr, "auto", batch=False, runs=args.runs))
        moe = moe_input(work)
        print("MoE: 10,000 tokens, 100 experts", flush=True)
        run_only["moe"] = runner.run_only("moe", "moe-run-only", moe, batch=False)
        rows.append(runner.row("moe", "moe", moe, "auto", batch=False, runs=args.runs))
        rows.append(runner.row("moe", "moe-mlir", moe, "mlir", batch=False))
        moe_outs = [r["output"] for r in rows if r["workload"] == "moe"]
        identical["moe"] = same_bytes(*moe_outs)
        if not identical["moe"]:
            raise BenchError(f"moe: outputs differ between front ends: {moe_outs}")
    for r in rows:
        os.remove(r.pop("output"))
    machine["cpu_busy_share_after"] = treelstm.cpu_busy_share()
    stem = "endtoend-quick" if args.quick else "endtoend"
    if args.copies != 20:
        stem += f"-copies{args.copies}"
    command = "bench/run.sh BUILD endtoend" + (" --quick" if args.quick else "") + (
        f" --copies {args.copies}" if args.copies != 20 else "")
    text = table(rows, run_only)
    lines = verdicts(rows, run_only)
    result = dict(machine=machine, rows=rows, run_only=run_only, targets=lines,
                  outputs_identical=identical, calls=runner.calls, command=command,
                  wall_seconds=time.monotonic() - started)
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write("\n".join(text + [""] + [f"- {l}" for l in lines]) + "\n")
    print()
    print("\n".join(text))
    print()
    print("\n".join(lines))
    busy = [machine["cpu_busy_share_before"], machine["cpu_busy_share_after"]]
    if any(b is not None and b > 0.1 for b in busy):
        print("warning: the CPUs were busy before or after the runs: the figures are low")
    print(f"wrote {os.path.join(out_dir, stem)}.json and .md; reproduce: {command}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print(f"\nendtoend benchmark: error: {e}", file=sys.stderr)
        sys.exit(1)
