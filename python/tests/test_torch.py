"""A PyTorch TreeLSTM's weights, passed to dynb as its state_dict, give
PyTorch's outputs on SST trees."""
import numpy as np
import pytest

import dynb
from conftest import build_instance, read_instances

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")


class TreeLstm(torch.nn.Module):
    """The binary TreeLSTM of sst2dynb's model, parameters under dynb's names."""

    def __init__(self, vocab, hdim):
        super().__init__()
        p = lambda *shape: torch.nn.Parameter(torch.empty(*shape).uniform_(-0.3, 0.3))
        self.E, self.W_iou, self.b_iou = p(vocab, hdim), p(3 * hdim, hdim), p(3 * hdim)
        self.U_iou, self.U_f1, self.U_f2, self.b_f = p(3 * hdim, 2 * hdim), p(hdim, hdim), p(hdim, hdim), p(hdim)
        self.h = hdim

    def cell(self, iou, fc):
        h = self.h
        i, o, u = torch.sigmoid(iou[:h]), torch.sigmoid(iou[h:2 * h]), torch.tanh(iou[2 * h:])
        c = i * u if fc is None else i * u + fc
        return o * torch.tanh(c), c

    def forward(self, nodes):
        """One interchange instance: the h of its output node."""
        F, values = torch.nn.functional, []
        for n in nodes:
            if n["op"] == "embedding":
                values.append((self.E[n["index"]],))
            elif n["module"] == "leaf":
                values.append(self.cell(F.linear(values[n["inputs"][0]][0], self.W_iou, self.b_iou), None))
            else:
                (l, _), (_, _), (r, _), (_, _) = n["inputs"]
                h1, c1 = values[l]
                h2, c2 = values[r]
                iou = F.linear(torch.cat([h1, h2]), self.U_iou, self.b_iou)
                f1 = torch.sigmoid(F.linear(h1, self.U_f1, self.b_f))
                f2 = torch.sigmoid(F.linear(h2, self.U_f2, self.b_f))
                values.append(self.cell(iou, f1 * c1 + f2 * c2))
        return values


def test_state_dict_gives_pytorchs_outputs(sst_small):
    torch.manual_seed(0)
    instances = read_instances(sst_small)
    engine = dynb.Engine.load(sst_small)  # seeded, then replaced below
    vocab, hdim = engine.parameters()["E"].shape
    model = TreeLstm(vocab, hdim)
    engine = dynb.Engine.load(sst_small, params={k: v.numpy() for k, v in model.state_dict().items()})
    batch = engine.batch()
    for inst in instances:
        build_instance(engine, batch.add_instance(), inst["nodes"], inst["outputs"])
    results = engine.run(batch)
    with torch.no_grad():
        for i, inst in enumerate(instances):
            node, k = inst["outputs"][0]
            want = model(inst["nodes"])[node][k].numpy()
            np.testing.assert_allclose(results.output(i, 0), want, rtol=1e-4, atol=1e-6)
