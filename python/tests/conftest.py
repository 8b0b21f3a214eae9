"""Fixtures of the Python module's tests: the tools and SST trees of the
build being tested (DYNB_BUILD_DIR, set by tests/run-all.sh)."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DYNB_BUILD_DIR", os.path.join(ROOT, "build"))
SST_DEV = os.path.join(ROOT, "examples", "treelstm", "data", "sst", "dev.txt")


def tool(name):
    return os.path.join(BUILD, "bin", name)


def sst_model(tmp_path, name, trees, hdim, labels=False):
    path = str(tmp_path / name)
    cmd = [tool("sst2dynb"), SST_DEV, "--hdim", str(hdim), "--limit", str(trees), "-o", path]
    if labels:
        cmd.append("--labels")
    subprocess.run(cmd, check=True)
    return path


@pytest.fixture(scope="session")
def sst_small(tmp_path_factory):
    """24 SST dev trees at hdim 16: the model and its instances."""
    return sst_model(tmp_path_factory.mktemp("sst"), "sst24.json", 24, 16)


@pytest.fixture(scope="session")
def sst_labels(tmp_path_factory):
    """12 SST dev trees at hdim 8 with the classifier and its losses."""
    return sst_model(tmp_path_factory.mktemp("sstl"), "sstl.json", 12, 8, labels=True)


def read_instances(path):
    with open(path) as f:
        return json.load(f)["instances"]


def build_instance(engine, inst, nodes, outputs):
    """Adds one interchange instance's nodes (docs/interchange.md) through
    the typed handles, as an application building its graphs would."""
    values = []

    def ref(r):
        node, result = (r if isinstance(r, list) else (r, 0))
        return values[node][result]

    for n in nodes:
        op = n["op"]
        if op == "embedding":
            values.append([inst.embedding(engine.param(n["table"]), n["index"])])
        elif op == "call":
            values.append(inst.call(engine.module(n["module"]), [ref(r) for r in n["inputs"]]))
        elif op == "linear":
            bias = engine.param(n["bias"]) if "bias" in n else None
            values.append([inst.linear(ref(n["inputs"][0]), engine.param(n["weight"]), bias)])
        elif op == "softmax_xent":
            values.append([inst.softmax_xent(ref(n["inputs"][0]), n["label"])])
        else:
            raise AssertionError("op %s not handled by the test's builder" % op)
    for o in outputs:
        inst.output(ref(o))
