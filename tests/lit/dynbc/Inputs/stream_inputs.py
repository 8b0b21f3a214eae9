"""Writes JSON Lines inputs for stream.test from tiny.json: OUT_DIR gets
good.jsonl (the two instances repeated), and files whose bad line comes in a
later batch than the first."""
import copy
import json
import os
import sys

src, out = sys.argv[1], sys.argv[2]
with open(src) as f:
    tiny = json.load(f)
header = json.dumps({"dynb": 1, "model": tiny["model"]})
good = [json.dumps(i) for i in tiny["instances"]]


def write(name, lines):
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(lines) + "\n")


# 10 instances, a blank line among them (skipped, but counted as a line).
body = good * 5
write("good.jsonl", [header] + body[:7] + [""] + body[7:])

# Instance 6 (line 8) indexes past the table: reported in the fourth batch of 2.
bad = copy.deepcopy(tiny["instances"][1])
bad["nodes"][0]["index"] = 9
write("bad-index.jsonl", [header] + body[:6] + [json.dumps(bad)] + body[6:])

# Instance 5 (line 7) returns two vectors where instance 0 returns one.
other = copy.deepcopy(tiny["instances"][1])
other["outputs"] = [1, 2]
write("other-outputs.jsonl", [header] + body[:5] + [json.dumps(other)] + body[5:])

# A duplicate key on line 6, and a line that is not JSON on line 5.
write("dup-key.jsonl", [header] + body[:4] + ['{"nodes": [], "nodes": [], "outputs": []}'])
write("not-json.jsonl", [header] + body[:3] + ['{"nodes": ['])
write("empty.jsonl", [""])
