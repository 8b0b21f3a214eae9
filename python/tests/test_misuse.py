"""Misuse of the Python module raises dynb.Error (or the Python error
that fits) with dynb's located message; nothing crashes."""
import numpy as np
import pytest

import dynb
from conftest import sst_model


@pytest.fixture()
def engine(sst_small):
    return dynb.Engine.load(sst_small, seed=1)


def test_unknown_names(engine):
    with pytest.raises(dynb.Error, match="unknown parameter 'nope'"):
        engine.param("nope")
    with pytest.raises(dynb.Error, match="nope"):
        engine.module("nope")


def test_a_missing_model_file_names_it(tmp_path):
    with pytest.raises(dynb.Error, match="missing.json"):
        dynb.Engine.load(str(tmp_path / "missing.json"))


def test_wrong_arguments_raise_where_they_happen(engine):
    batch = engine.batch()
    inst = batch.add_instance()
    with pytest.raises(dynb.Error, match=r"instance 0, node 0 \(call @leaf\): @leaf takes 1"):
        inst.call(engine.module("leaf"), [])
    # The failed instance fails the run too, unless it is discarded.
    with pytest.raises(dynb.Error, match="@leaf takes 1"):
        engine.run(batch)
    batch = engine.batch()
    bad = batch.add_instance()
    with pytest.raises(dynb.Error):
        bad.call(engine.module("leaf"), [])
    batch.discard(bad)
    good = batch.add_instance()
    good.output(good.call(engine.module("leaf"), [good.embedding(engine.param("E"), 0)])[0])
    results = engine.run(batch)
    assert results.num_outputs(1) == 1 and results.output(1, 0).shape == (16,)


def test_python_types_are_checked(engine):
    inst = engine.batch().add_instance()
    with pytest.raises(TypeError):
        inst.embedding("E", 0)
    with pytest.raises(TypeError):
        inst.call(engine.module("leaf"), [1, 2])


def test_stale_instances_and_other_engines_batches(engine, sst_small):
    batch = engine.batch()
    inst = batch.add_instance()
    inst.output(inst.call(engine.module("leaf"), [inst.embedding(engine.param("E"), 0)])[0])
    engine.run(batch)
    with pytest.raises(dynb.Error, match="stale"):
        inst.embedding(engine.param("E"), 0)
    other = dynb.Engine.load(sst_small, seed=1)
    with pytest.raises(dynb.Error, match="another engine"):
        other.run(engine.batch())


def test_parameters_of_the_wrong_name_or_shape(sst_small, engine):
    tensors = {k: np.array(v) for k, v in engine.parameters().items()}
    wrong = dict(tensors, b_f=np.zeros(3, np.float32))
    with pytest.raises(dynb.Error, match=r"'b_f' has shape \[3\] but the model declares \[16\]"):
        dynb.Engine.load(sst_small, params=wrong)
    extra = dict(tensors, W_extra=np.zeros(3, np.float32))
    with pytest.raises(dynb.Error, match="'W_extra' is not a parameter"):
        dynb.Engine.load(sst_small, params=extra)
    missing = {k: v for k, v in tensors.items() if k != "E"}
    with pytest.raises(dynb.Error, match="no value for parameter E"):
        engine.set_parameters(missing)
    with pytest.raises(ValueError, match="not both"):
        dynb.Engine.load(sst_small, params=tensors, seed=2)
    # A failed set_parameters writes nothing.
    assert np.array_equal(engine.parameters()["E"], tensors["E"])


def test_bad_options_and_indices(engine, sst_small, tmp_path):
    with pytest.raises(ValueError, match="unknown strategy 'fast'"):
        dynb.Engine.load(sst_small, strategy="fast")
    with pytest.raises(ValueError, match="batch_size"):
        engine.run_file(sst_small, batch_size=-1)
    with pytest.raises(dynb.Error):
        engine.run_file(str(tmp_path / "none.jsonl"))
    results = engine.run(engine.batch())
    with pytest.raises(IndexError):
        results.output(0, 0)


def test_a_builder_that_raises_fails_its_submission_alone(engine):
    leaf, E = engine.module("leaf"), engine.param("E")

    def good(x):
        x.output(x.call(leaf, [x.embedding(E, 1)])[0])

    def bad(x):
        raise KeyError("from the builder")

    kept = []
    with dynb.MicroBatcher(engine, max_instances=2, max_delay=0.05) as batcher:
        f1, f2 = batcher.submit(bad), batcher.submit(good)
        with pytest.raises(KeyError, match="from the builder"):
            f1.result()
        assert f2.result()[0].shape == (16,)
        batcher.run(lambda x: kept.append(x) or good(x))
    with pytest.raises(dynb.Error, match="builder that has returned"):
        kept[0].embedding(E, 0)


def test_run_file_of_another_model_names_the_parameter(engine, sst_labels, tmp_path):
    # sst_labels is hdim 8 with a classifier; the engine's model is hdim 16.
    with pytest.raises(dynb.Error, match=r"sstl\.json: parameter '\w+' is \[.*\] here but \[.*\] in the engine's model"):
        engine.run_file(sst_labels)
    other = sst_model(tmp_path, "sst16l.json", 2, 16, labels=True)
    with pytest.raises(dynb.Error, match=r"sst16l\.json: parameter '\w+' is not in the engine's model"):
        engine.run_file(other)
