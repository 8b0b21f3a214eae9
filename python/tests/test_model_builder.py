"""A model built in Python with dynb.ModelBuilder runs as the same model
read from sst2dynb's file, and its mistakes are located."""
import numpy as np
import pytest

import dynb
from conftest import build_instance, read_instances


def tree_lstm(vocab, h, name="treelstm"):
    model = dynb.ModelBuilder(name)
    for pname, shape in [("E", [vocab, h]), ("W_iou", [3 * h, h]), ("b_iou", [3 * h]),
                         ("U_iou", [3 * h, 2 * h]), ("U_f1", [h, h]), ("U_f2", [h, h]),
                         ("b_f", [h])]:
        model.param(pname, shape)

    def cell(m, iou, fc):
        i = m.sigmoid(m.slice(iou, 0, h))
        o = m.sigmoid(m.slice(iou, h, h))
        u = m.tanh(m.slice(iou, 2 * h, h))
        c = m.mul(i, u)
        for f in fc:  # (i*u + f1*c1) + f2*c2, as sst2dynb writes it
            c = m.add(c, f)
        m.output(m.mul(o, m.tanh(c)))
        m.output(c)

    leaf = model.module("leaf")
    cell(leaf, leaf.linear(leaf.arg([h]), "W_iou", "b_iou"), [])
    inner = model.module("internal")
    h1, c1, h2, c2 = (inner.arg([h]) for _ in range(4))
    iou = inner.linear(inner.concat([h1, h2]), "U_iou", "b_iou")
    f1 = inner.sigmoid(inner.linear(h1, "U_f1", "b_f"))
    f2 = inner.sigmoid(inner.linear(h2, "U_f2", "b_f"))
    cell(inner, iou, [inner.mul(f1, c1), inner.mul(f2, c2)])
    return model


def test_built_model_equals_the_files_model(sst_small):
    from_file = dynb.Engine.load(sst_small, seed=2)
    vocab, h = from_file.parameters()["E"].shape
    params = {k: np.array(v) for k, v in from_file.parameters().items()}
    built = dynb.Engine.load(tree_lstm(vocab, h), params=params)
    outs = []
    for engine in (from_file, built):
        batch = engine.batch()
        for inst in read_instances(sst_small):
            build_instance(engine, batch.add_instance(), inst["nodes"], inst["outputs"])
        r = engine.run(batch)
        outs.append(np.stack([r.output(i, 0) for i in range(r.num_instances)]))
    assert np.array_equal(outs[0], outs[1])


def test_builder_mistakes_are_located():
    model = tree_lstm(10, 4, name="mine")
    broken = model.module("broken")
    broken.output(broken.linear(broken.arg([4]), "W_nope"))
    with pytest.raises(dynb.Error, match=r"mine.*module 'broken', node 1 \(linear\).*W_nope"):
        dynb.Engine.load(model, seed=1)
