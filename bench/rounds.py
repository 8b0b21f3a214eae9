#!/usr/bin/env python3
# A builder that reads at every step: runTasks' cost per round as the rounds add up.
"""Usage: bench/rounds.py BUILD_DIR [--quick] [--out DIR] [--threads N] [--instances N] [--hdim N]

Runs BUILD_DIR/bin/dynb-rounds-bench: --instances routers, each reading its
score and calling module a or b at every round, for 4, 16, 64 and 256 rounds
(--quick: 4 and 16), with agenda. Each figure is the median wall time of
runTasks (building, scheduling, planning and running all included) over
five passes after a warm-up. Prints microseconds a round and a node for
each round count, with the growth of the time a round from the fewest
rounds to the most (1.0: flat), and writes rounds.json (--quick: rounds-quick.json) to
BUILD_DIR/bench (or --out DIR).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main(argv):
    p = argparse.ArgumentParser(prog="bench/rounds.py", description=__doc__.splitlines()[2])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--quick", action="store_true", help="4 and 16 rounds only")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--instances", type=int, default=64)
    p.add_argument("--hdim", type=int, default=64)
    args = p.parse_args(argv)
    build = os.path.abspath(args.build)
    out_dir = args.out or os.path.join(build, "bench")
    os.makedirs(out_dir, exist_ok=True)
    counts = "4,16" if args.quick else "4,16,64,256"
    tool = os.path.join(build, "bin", "dynb-rounds-bench")
    if not os.path.exists(tool):
        sys.exit("bench/rounds.py: %s is missing: run tools/dev build" % tool)
    proc = subprocess.run([tool, "--rounds", counts, "--instances", str(args.instances),
                           "--hdim", str(args.hdim), "--run-threads", str(args.threads)],
                          check=True, capture_output=True, text=True)
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
    growth = rows[-1]["us_per_round"] / rows[0]["us_per_round"]
    print("CPU: %s; %d instances, hdim %d, agenda; median of 5 passes" % (cpu_name(), args.instances, args.hdim))
    print("%7s %6s %9s %9s %12s %12s" % ("rounds", "runs", "nodes", "launches", "us/round", "us/node"))
    for r in rows:
        print("%7d %6d %9d %9d %12.1f %12.3f" % (r["rounds"], r["runs"], r["nodes"], r["launches"],
                                                r["us_per_round"], r["us_per_node"]))
    print("time a round, %d rounds over %d: %.2fx (1.0: flat)" % (rows[-1]["rounds"], rows[0]["rounds"], growth))
    # A quick run never reaches the report (bench/report.py reads rounds.json).
    name = "rounds-quick.json" if args.quick else "rounds.json"
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump({"cpu": cpu_name(), "instances": args.instances, "hdim": args.hdim, "rows": rows,
                   "growth": growth, "date": time.strftime("%Y-%m-%d")}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
