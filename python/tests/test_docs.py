"""The Python examples of docs/python.md and the README run as written
(on an sst2dynb model written where they expect `m.json`)."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, SST_DEV, tool


def python_blocks(path):
    with open(path) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.fixture()
def in_model_dir(tmp_path, monkeypatch):
    subprocess.run([tool("sst2dynb"), SST_DEV, "--hdim", "8", "--limit", "1", "-o",
                    str(tmp_path / "m.json")], check=True)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("doc,block", [("docs/python.md", 0), ("docs/python.md", 1), ("README.md", 0)])
def test_python_examples_run(doc, block, in_model_dir, capsys):
    blocks = python_blocks(os.path.join(ROOT, doc))
    assert len(blocks) > block, "%s has no Python example %d" % (doc, block)
    code = blocks[block]
    if "import dynb" not in code:
        code = "import dynb\n" + code
    exec(compile(code, doc, "exec"), {})
    out = capsys.readouterr().out
    assert out.strip(), "%s's example printed nothing" % doc
    if doc == "docs/python.md" and block == 0:
        assert out.strip().splitlines()[-1] == "3"  # the launches its comment claims
