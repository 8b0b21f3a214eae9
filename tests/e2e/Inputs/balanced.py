"""Writes COUNT balanced binary trees of 2**K leaves in PTB bracket form."""
import sys

k, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def tree(leaves, first):
    # Built bottom-up without recursion: a level of nodes at a time.
    level = ["(2 w%d)" % ((first + i) % 50) for i in range(leaves)]
    while len(level) > 1:
        level = ["(2 %s %s)" % (level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


with open(out, "w") as f:
    for t in range(count):
        f.write(tree(2 ** k, t) + "\n")
