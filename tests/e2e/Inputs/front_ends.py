"""Runs dynbc on one input with each front end and each of the strategies
(comma-separated) given; prints
'STRATEGY records mlir same' when both wrote the same outputs (bytes) and
report the same plan figures, else what differs."""
import json
import subprocess
import sys

FIGURES = ["instances", "nodes", "batches", "launches", "lower_bound",
           "gathers_copied", "gathers_as_views", "concats_placed",
           "arena_bytes", "peak_live_bytes", "output_bytes"]

path, tmp, strategies, *args = sys.argv[1:]
for strategy in strategies.split(","):
    seen = {}
    for front_end in ["auto", "mlir"]:
        out = f"{tmp}.{strategy}.{front_end}"
        subprocess.run(["dynbc", "run", path, f"--strategy={strategy}",
                        f"--front-end={front_end}", "--output", out + ".npy",
                        "--report", out + ".json", *args],
                       check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(out + ".json"))["results"][0]
        seen[front_end] = (report["front_end"],
                           {k: report[k] for k in FIGURES},
                           open(out + ".npy", "rb").read())
    (fa, a, na), (fm, m, nm) = seen["auto"], seen["mlir"]
    diff = [k for k in FIGURES if a[k] != m[k]]
    if na != nm:
        diff.append("outputs")
    print(strategy, fa, fm, "same" if not diff else "differ: " + ", ".join(
        f"{k} {a.get(k)} vs {m.get(k)}" for k in diff))
