#!/usr/bin/env python3
"""Regenerates the seed corpora in tests/fuzz/corpus/ (small: a few KB each).

usage: tests/fuzz/make-corpus.py BUILD_DIR

BUILD_DIR is a normal build with bin/sst2dynb and bin/dynbc (for the SST
conversions and the --emit=dynb/batched IR). Seeds come from the lit inputs
(tests/lit/dynbc/Inputs, tests/lit/Dialect and Transforms split at
'// -----'), sst2dynb --limit 2 --hdim 4, a few SST lines, and safetensors
files written by tests/lit/dynbc/Inputs/safetensors.py. Valid and invalid
inputs both: the invalid ones reach the error paths straight away.

fuzz-json seeds start with the selector byte fuzz-json.cpp reads (bits 0-1:
.json, .jsonl or a probed name; bits 2-3: strategy; bits 4-5: batch size;
bit 6: keep-instances).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
INPUTS = os.path.join(ROOT, "tests", "lit", "dynbc", "Inputs")
SST = os.path.join(ROOT, "examples", "treelstm", "data", "sst", "dev.txt")

JSON, JSONL, PROBE = 0, 1, 2
NONE, DEPTH, AGENDA = 0 << 2, 1 << 2, 2 << 2


def build_tool(build, name):
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        sys.exit("make-corpus.py: %s is not built" % path)
    return path


def reset(target):
    d = os.path.join(CORPUS, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def put(d, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def sst_lines(n, max_len=200):
    out = []
    for line in open(SST):
        if len(line.strip()) <= max_len:
            out.append(line.strip())
        if len(out) == n:
            break
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    sst2dynb = build_tool(build, "sst2dynb")
    dynbc = build_tool(build, "dynbc")
    tmp = tempfile.mkdtemp()
    try:
        make(tmp, sst2dynb, dynbc)
    finally:
        shutil.rmtree(tmp)


def make(tmp, sst2dynb, dynbc):
    # Two short SST trees, converted at hdim 4.
    trees = os.path.join(tmp, "two.txt")
    with open(trees, "w") as f:
        f.write("\n".join(sst_lines(2, 60)) + "\n")
    two_json = os.path.join(tmp, "two.json")
    two_jsonl = os.path.join(tmp, "two.jsonl")
    subprocess.check_call([sst2dynb, trees, "--hdim", "4", "--limit", "2", "-o", two_json])
    subprocess.check_call([sst2dynb, trees, "--hdim", "4", "--limit", "2", "-o", two_jsonl])
    two_labels = os.path.join(tmp, "two-labels.jsonl")
    subprocess.check_call([sst2dynb, trees, "--hdim", "4", "--limit", "2", "--labels",
                           "-o", two_labels])

    # fuzz-json
    d = reset("fuzz-json")
    tiny = open(os.path.join(INPUTS, "tiny.json"), "rb").read()
    put(d, "tiny-none", bytes([JSON | NONE]) + tiny)
    put(d, "tiny-depth-b1", bytes([JSON | DEPTH | (1 << 4)]) + tiny)
    put(d, "tiny-agenda-keep", bytes([JSON | AGENDA | (1 << 6)]) + tiny)
    put(d, "two-json", bytes([JSON | AGENDA]) + open(two_json, "rb").read())
    put(d, "two-jsonl", bytes([JSONL | DEPTH]) + open(two_jsonl, "rb").read())
    put(d, "two-labels-jsonl", bytes([JSONL | AGENDA]) + open(two_labels, "rb").read())
    put(d, "two-probed", bytes([PROBE | AGENDA | (2 << 4)]) + open(two_jsonl, "rb").read())
    mut = os.path.join(tmp, "mutated")
    os.makedirs(mut)
    subprocess.check_call([sys.executable, os.path.join(INPUTS, "mutate.py"),
                           os.path.join(INPUTS, "tiny.json"), mut])
    for name in sorted(os.listdir(mut)):
        kind = JSONL if name.endswith(".jsonl") else JSON
        put(d, "err-" + os.path.splitext(name)[0],
            bytes([kind | AGENDA]) + open(os.path.join(mut, name), "rb").read())
    put(d, "err-empty", bytes([JSONL]))
    put(d, "err-not-object", bytes([JSON]) + b"[1, 2, 3]")
    put(d, "err-big-shape", bytes([JSON]) + json.dumps(
        {"dynb": 1, "model": {"params": [{"name": "E", "shape": [1 << 20, 1 << 20]}],
                              "modules": []}, "instances": []}).encode())
    put(d, "slice-pairs", bytes([JSON | DEPTH]) + json.dumps(
        {"dynb": 1,
         "model": {"params": [{"name": "E", "shape": [3, 4]}], "modules": [
             {"name": "m", "nodes": [{"op": "arg", "shape": [4]}, {"op": "arg", "shape": [4]},
                                     {"op": "mul", "inputs": [0, 1]},
                                     {"op": "slice", "inputs": [2], "offset": 1, "size": 2}],
              "outputs": [3, [2, 0]]}]},
         "instances": [{"nodes": [{"op": "embedding", "table": "E", "index": 0},
                                  {"op": "call", "module": "m", "inputs": [0, 0]}],
                        "outputs": [[1, 0]]},
                       {"nodes": [{"op": "embedding", "table": "E", "index": 2},
                                  {"op": "add", "inputs": [0, 0]},
                                  {"op": "call", "module": "m", "inputs": [1, 0]}],
                        "outputs": [[2, 0]]}]}).encode())

    # fuzz-mlir: the lit tests split at '// -----', and dynbc's own output.
    d = reset("fuzz-mlir")
    for sub in ("Dialect", "Transforms"):
        lit = os.path.join(ROOT, "tests", "lit", sub)
        for name in sorted(os.listdir(lit)):
            if not name.endswith(".mlir"):
                continue
            text = open(os.path.join(lit, name)).read()
            for i, chunk in enumerate(text.split("// -----")):
                lines = [l for l in chunk.splitlines()
                         if not l.lstrip().startswith(("// RUN", "// CHECK"))]
                chunk = "\n".join(lines).strip() + "\n"
                if chunk.strip():
                    put(d, "%s-%s-%d" % (sub.lower(), os.path.splitext(name)[0], i), chunk)
    # Valid IR a mutation or two away from unusual shapes: rank-0 values,
    # an explicit entry block in an instance, the generic op form.
    put(d, "rank0-func", """func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %s = dynb.add %a, %b : tensor<f32>
  %t = dynb.tanh %s : tensor<f32>
  return %t : tensor<f32>
}
""")
    put(d, "instance-entry-block", """dynb.param @E : tensor<6x4xf32>
dynb.instance {
^bb0:
  %x = dynb.embedding @E [1] : tensor<4xf32>
  %t = dynb.concat %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %u = dynb.slice %t [2, 4] : tensor<8xf32> -> tensor<4xf32>
  dynb.output %u : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @E [2] : tensor<4xf32>
  dynb.output %x : tensor<4xf32>
}
""")
    put(d, "generic-form", """"dynb.param"() <{sym_name = "E", type = tensor<6x4xf32>}> : () -> ()
"dynb.instance"() ({
  %x = "dynb.embedding"() <{index = 3 : i64, table = @E}> : () -> tensor<4xf32>
  "dynb.output"(%x) : (tensor<4xf32>) -> ()
}) : () -> ()
""")
    # Sizes near the edges: element counts that wrap at 2^31, 2^32, 2^63 and
    # 2^64, aliases that carry nesting into their uses, an affine map, a
    # concat wider than one compiled kernel holds, and a module near the
    # ops budget's scale (valid, so the fuzzer mutates past each check).
    one_launch = open(os.path.join(INPUTS, "one-launch.mlir")).read()
    for tag, shape in (("2p31", "2147483648x16"), ("2p32", "65536x65536"),
                       ("2p63", "2147483648x2147483648x2"),
                       ("2p64", "65536x65536x65536x65536")):
        put(d, "wrap-" + tag, one_launch + "dynb.param @Big : tensor<%sxf32>\n" % shape)
    put(d, "aliases", """#m = affine_map<(d0, d1) -> (d0 + d1 * 4, d1)>
!t = tuple<tuple<tensor<4xf32>>, i32>
module attributes {test.a = #m, test.b = tuple<!t, !t>} {
  dynb.param @E : tensor<6x4xf32>
  dynb.instance {
    %x = dynb.embedding @E [1] : tensor<4xf32>
    dynb.output %x : tensor<4xf32>
  }
}
""")
    wide = ", ".join(["%%x%d" % (i % 3) for i in range(12)])
    put(d, "wide-concat", "\n".join(
        ["dynb.param @E : tensor<6x4xf32>",
         "func.func @wide(%x0: tensor<4xf32>, %x1: tensor<4xf32>) -> tensor<48xf32> {",
         "  %x2 = dynb.tanh %x1 : tensor<4xf32>",
         "  %c = dynb.concat " + wide + " : (" + ", ".join(["tensor<4xf32>"] * 12) +
         ") -> tensor<48xf32>",
         "  return %c : tensor<48xf32>", "}",
         "dynb.instance {",
         "  %a = dynb.embedding @E [1] : tensor<4xf32>",
         "  %b = dynb.embedding @E [2] : tensor<4xf32>",
         "  %c = dynb.call @wide(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<48xf32>",
         "  dynb.output %c : tensor<48xf32>", "}", ""]))
    chain = ["func.func @long(%v0: tensor<4xf32>) -> tensor<4xf32> {"]
    chain += ["  %%v%d = dynb.tanh %%v%d : tensor<4xf32>" % (i, i - 1) for i in range(1, 40)]
    chain += ["  return %v39 : tensor<4xf32>", "}",
              "dynb.param @E : tensor<6x4xf32>",
              "dynb.instance {",
              "  %a = dynb.embedding @E [1] : tensor<4xf32>",
              "  %b = dynb.call @long(%a) : (tensor<4xf32>) -> tensor<4xf32>",
              "  dynb.output %b : tensor<4xf32>", "}", ""]
    put(d, "chain-40", "\n".join(chain))
    tiny_path = os.path.join(INPUTS, "tiny.json")
    for emit in ("dynb", "batched"):
        for src, tag in ((tiny_path, "tiny"), (two_json, "two")):
            out = subprocess.check_output([dynbc, "compile", src, "--emit=" + emit])
            put(d, "emit-%s-%s" % (tag, emit), out)

    # fuzz-safetensors
    d = reset("fuzz-safetensors")
    script = os.path.join(INPUTS, "safetensors.py")
    for mode in ("good", "truncated", "f16", "lying-header", "bad-json"):
        path = os.path.join(tmp, mode + ".safetensors")
        subprocess.check_call([sys.executable, script, path, mode, "E:6x4", "W:4x4", "b:4"])
        put(d, mode, open(path, "rb").read())

    def st(header, data=b""):
        text = json.dumps(header).encode()
        return struct.pack("<Q", len(text)) + text + data

    put(d, "metadata", st({"__metadata__": {"format": "pt"},
                           "v": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
                          struct.pack("<2f", 1.0, 2.0)))
    put(d, "overlap", st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
                         bytes(12)))
    # A zero-element tensor: found by fuzz-safetensors (memcpy from a null
    # pointer), fixed in 5f7cc14; kept as a regression seed.
    put(d, "zero-dim", st({"z": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}}))
    put(d, "scalar", st({"s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, bytes(4)))
    put(d, "short", b"\x08\x00\x00")

    # fuzz-sst
    d = reset("fuzz-sst")
    put(d, "dev-lines", "\n".join(sst_lines(3, 120)) + "\n")
    put(d, "blank-lines", "\n  \n(2 (2 a) (3 b))\r\n\t\n(4 x)\n")
    balanced = "(2 w0)"
    for i in range(4):
        balanced = "(2 %s %s)" % (balanced, balanced)
    put(d, "balanced", balanced + "\n")
    put(d, "deep", "(1 " * 40 + "(2 a) " + "(2 b)) " * 40 + "\n")
    put(d, "err-open", "(2 (2 a) (3 b)\n")
    put(d, "err-three", "(2 (2 a) (2 b))\n(2 (2 a) (2 b) (2 c))\n")
    put(d, "err-words", "(2 a b)\n")
    put(d, "err-one-child", "(2 (2 a))\n")
    put(d, "err-word-and-tree", "(2 a (2 b))\n(2 (2 b) a)\n")
    put(d, "err-after", "(2 a) )\n(2 a) b\n")
    put(d, "err-no-label", "( a)\n")
    put(d, "err-empty", "(2)\n")
    put(d, "err-no-paren", "2 a\n")


if __name__ == "__main__":
    main()
