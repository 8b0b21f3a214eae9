"""The dynb Python module against dynbc on SST trees: the same outputs bit
for bit, from graphs built op by op in Python and from run_file."""
import os
import subprocess
import threading

import numpy as np
import pytest

import dynb
from conftest import build_instance, read_instances, tool

STRATEGIES = ["none", "depth", "agenda"]


def dynbc_outputs(tmp_path, model, strategy, extra=()):
    out = str(tmp_path / ("out-%s.npy" % strategy))
    subprocess.run([tool("dynbc"), "run", model, "--strategy", strategy, "--output", out,
                    "--repeat", "0", *extra], check=True, stdout=subprocess.DEVNULL)
    return np.load(out)


def build_batch(engine, model):
    batch = engine.batch()
    for inst in read_instances(model):
        build_instance(engine, batch.add_instance(), inst["nodes"], inst["outputs"])
    return batch


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_built_in_python_equals_dynbc_bit_for_bit(tmp_path, sst_small, strategy):
    engine = dynb.Engine.load(sst_small, seed=1, strategy=strategy)
    results = engine.run(build_batch(engine, sst_small))
    got = np.stack([results.output(i, 0) for i in range(results.num_instances)])
    want = dynbc_outputs(tmp_path, sst_small, strategy, ["--seed", "1"])
    assert got.shape == want.shape == (24, 16)
    assert np.array_equal(got, want)
    assert results.stats["instances"] == 24


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_run_file_equals_dynbc_output(tmp_path, sst_small, strategy):
    engine = dynb.Engine.load(sst_small, seed=1)
    got = engine.run_file(sst_small, batch_size=7, strategy=strategy)
    want = dynbc_outputs(tmp_path, sst_small, strategy, ["--seed", "1", "--batch-size", "7"])
    assert got.dtype == np.float32
    assert np.array_equal(got, want)


def test_params_from_a_dict_equal_params_from_a_file(tmp_path, sst_small):
    seeded = dynb.Engine.load(sst_small, seed=3)
    tensors = {k: np.array(v) for k, v in seeded.parameters().items()}
    from_dict = dynb.Engine.load(sst_small, params=tensors)
    a = seeded.run_file(sst_small)
    b = from_dict.run_file(sst_small)
    assert np.array_equal(a, b)
    # float64 arrays are converted, as a state_dict's may need.
    from_f64 = dynb.Engine.load(sst_small, params={k: v.astype(np.float64) for k, v in tensors.items()})
    assert np.array_equal(from_f64.run_file(sst_small), a)


def test_output_arrays_outlive_their_results(sst_small):
    engine = dynb.Engine.load(sst_small, seed=1)
    results = engine.run(build_batch(engine, sst_small))
    first = results.output(0, 0)
    copy = first.copy()
    assert not first.flags.writeable and not first.flags.owndata
    del results
    engine.run(build_batch(engine, sst_small))  # reuses the engine's arena
    assert np.array_equal(first, copy)


def test_parameters_are_views_an_optimizer_can_update(sst_small):
    engine = dynb.Engine.load(sst_small, seed=1)
    before = engine.run_file(sst_small)
    params = engine.parameters()
    params["b_iou"][:] += 0.5
    after = engine.run_file(sst_small)
    assert not np.array_equal(before, after)
    assert np.array_equal(engine.parameters()["b_iou"], params["b_iou"])


def test_gradient_matches_the_reference_gradient(tmp_path, sst_labels):
    engine = dynb.Engine.load(sst_labels, seed=1)
    grads = engine.gradient(build_batch(engine, sst_labels))
    ref_path = str(tmp_path / "ref.safetensors")
    subprocess.run([tool("dynbc"), "grad", sst_labels, "--seed", "1", "--strategy", "reference",
                    "-o", ref_path], check=True, stdout=subprocess.DEVNULL)
    ref = read_safetensors(ref_path)
    assert set(grads["values"]) == set(ref)
    for name, want in ref.items():
        got = grads["values"][name]
        assert got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-3, atol=1e-5), name
    assert grads["loss"] > 0 and grads["launches"] >= grads["lower_bound"] > 0


def read_safetensors(path):
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        assert t["dtype"] == "F32"
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(t["shape"])
    return out


def test_threads_run_batches_concurrently(sst_small):
    engine = dynb.Engine.load(sst_small, seed=1)
    want = engine.run(build_batch(engine, sst_small))
    want = np.stack([want.output(i, 0) for i in range(want.num_instances)])
    got, errors = [None] * 4, []

    def work(k):
        try:
            r = engine.run(build_batch(engine, sst_small))
            got[k] = np.stack([r.output(i, 0) for i in range(r.num_instances)])
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g in got:
        assert np.array_equal(g, want)


def test_micro_batcher_merges_submissions_from_threads(sst_small):
    engine = dynb.Engine.load(sst_small, seed=1)
    instances = read_instances(sst_small)
    want = engine.run_file(sst_small)
    got = [None] * len(instances)
    with dynb.MicroBatcher(engine, max_instances=8, max_delay=0.05) as batcher:
        def work(k):
            for i in range(k, len(instances), 4):
                inst = instances[i]
                out = batcher.run(lambda x: build_instance(engine, x, inst["nodes"], inst["outputs"]))
                got[i] = out[0]

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert batcher.batches_run < len(instances)
    for i, g in enumerate(got):
        assert np.allclose(g, want[i], rtol=1e-5, atol=1e-6)
