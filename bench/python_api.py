#!/usr/bin/env python3
# The Python module's overhead: SST trees built and run from Python, against the C++ API on the same trees.
"""Usage: bench/python_api.py BUILD_DIR [--quick] [--out DIR] [--threads N] [--trees N] [--rounds N]

For hdim 8 (where the time is overhead) and 256, at batch 64 with agenda,
builds every batch of SST dev trees node by node through the `dynb` Python
module (Instance.embedding and Instance.call, as an application would) and
runs it, and does the same through the C++ API (BUILD_DIR/bin/dynb-api-bench);
the two alternate `--rounds` times and each keeps its best pass. Prints
microseconds a node for each (whole pass, and the graph building alone) and
writes python-api.json to BUILD_DIR/bench (or --out DIR).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SST_DEV = os.path.join(ROOT, "examples", "treelstm", "data", "sst", "dev.txt")
BATCH = 64


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def trees_of(path):
    """Each instance as post-order steps: ('leaf', word) or ('internal', l, r)
    with l, r indices of earlier steps (prepared before timing, as the C++
    benchmark reads its trees before timing)."""
    with open(path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    trees = []
    for inst in lines[1:]:
        nodes, step_of, steps = inst["nodes"], {}, []
        for i, n in enumerate(nodes):
            if n["op"] != "call":
                continue
            refs = [r[0] if isinstance(r, list) else r for r in n["inputs"]]
            step_of[i] = len(steps)
            if n["module"] == "leaf":
                steps.append((nodes[refs[0]]["index"],))
            else:
                steps.append((step_of[refs[0]], step_of[refs[2]]))
        trees.append(steps)
    return trees


def python_pass(dynb, engine, trees):
    E, leaf, internal = engine.param("E"), engine.module("leaf"), engine.module("internal")
    build = run = 0.0
    nodes = 0
    check = 0.0
    start = time.perf_counter()
    for first in range(0, len(trees), BATCH):
        b0 = time.perf_counter()
        batch = engine.batch()
        for steps in trees[first:first + BATCH]:
            inst = batch.add_instance()
            hc = []
            for s in steps:
                if len(s) == 1:
                    hc.append(inst.call(leaf, [inst.embedding(E, s[0])]))
                else:
                    l, r = hc[s[0]], hc[s[1]]
                    hc.append(inst.call(internal, [l[0], l[1], r[0], r[1]]))
            inst.output(hc[-1][0])
        nodes += batch.num_nodes
        b1 = time.perf_counter()
        results = engine.run(batch)
        for i in range(results.num_instances):
            check += float(results.output(i, 0)[0])
        run += time.perf_counter() - b1
        build += b1 - b0
    return {"pass_s": time.perf_counter() - start, "build_s": build, "run_s": run,
            "nodes": nodes, "check": check}


def main(argv):
    p = argparse.ArgumentParser(prog="bench/python_api.py", description=__doc__.splitlines()[2])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--quick", action="store_true", help="hdim 8 only, one round, 200 trees")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--trees", type=int, default=0, help="first N dev trees (default all)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    try:
        import dynb
    except ImportError as e:
        sys.exit("bench/python_api.py: cannot import dynb from %s/python (%s): run tools/dev build" % (build, e))
    out_dir = args.out or os.path.join(build, "bench")
    os.makedirs(out_dir, exist_ok=True)
    hdims = [8] if args.quick else [8, 256]
    rounds = 1 if args.quick else args.rounds
    trees_limit = 200 if args.quick and not args.trees else args.trees
    rows = []
    for hdim in hdims:
        graphs = os.path.join(out_dir, "python-api-sst-dev-h%d.jsonl" % hdim)
        cmd = [os.path.join(build, "bin", "sst2dynb"), SST_DEV, "--hdim", str(hdim), "-o", graphs]
        if trees_limit:
            cmd[3:3] = ["--limit", str(trees_limit)]
        subprocess.run(cmd, check=True)
        trees = trees_of(graphs)
        engine = dynb.Engine.load(graphs, seed=1, strategy="agenda", threads=args.threads)
        python_pass(dynb, engine, trees)  # warm-up: kernels, arena
        best_py = best_cpp = None
        for _ in range(rounds):
            r = python_pass(dynb, engine, trees)
            best_py = r if best_py is None or r["pass_s"] < best_py["pass_s"] else best_py
            cpp = json.loads(subprocess.run(
                [os.path.join(build, "bin", "dynb-api-bench"), graphs, SST_DEV, "--batch-size", str(BATCH),
                 "--limit", str(len(trees)), "--strategy", "agenda", "--run-threads", str(args.threads)],
                check=True, capture_output=True, text=True).stdout)
            best_cpp = cpp if best_cpp is None or cpp["pass_s"] < best_cpp["pass_s"] else best_cpp
        if abs(best_cpp["check"] - best_py["check"]) > 1e-3 * max(1.0, abs(best_cpp["check"])):
            sys.exit("bench/python_api.py: the Python and C++ roots differ (%g vs %g)"
                     % (best_py["check"], best_cpp["check"]))
        n = best_py["nodes"]
        row = {
            "hdim": hdim, "trees": len(trees), "nodes": n,
            "python_us_per_node": 1e6 * best_py["pass_s"] / n,
            "python_build_us_per_node": 1e6 * best_py["build_s"] / n,
            "cpp_us_per_node": 1e6 * best_cpp["pass_s"] / best_cpp["nodes"],
            "cpp_build_us_per_node": best_cpp["build_us_per_node"],
            "python_trees_per_s": len(trees) / best_py["pass_s"],
            "cpp_trees_per_s": best_cpp["trees_per_s"],
        }
        row["python_over_cpp"] = row["python_us_per_node"] / row["cpp_us_per_node"]
        rows.append(row)
    print("CPU: %s; batch %d, agenda, best of %d rounds" % (cpu_name(), BATCH, rounds))
    print("%5s %6s %8s %14s %14s %12s %12s %8s" % ("hdim", "trees", "nodes", "Python us/node", "C++ us/node",
                                                 "Py build", "C++ build", "Py/C++"))
    for r in rows:
        print("%5d %6d %8d %14.3f %14.3f %12.3f %12.3f %7.2fx" % (
            r["hdim"], r["trees"], r["nodes"], r["python_us_per_node"], r["cpp_us_per_node"],
            r["python_build_us_per_node"], r["cpp_build_us_per_node"], r["python_over_cpp"]))
    with open(os.path.join(out_dir, "python-api.json"), "w") as f:
        json.dump({"cpu": cpu_name(), "batch": BATCH, "rounds": rounds, "rows": rows,
                   "date": time.strftime("%Y-%m-%d")}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
