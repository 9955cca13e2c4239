"""Issue 27: ``evaluate --workers N`` (and ``--executor ray``) runs every local model in worker processes
(:class:`clevr_poc.evaluation.model_pool.ModelPool`) with the answers of the single-process run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc.commands.main import main as cli_main
from clevr_poc.dataset_reader import load_dataset
from clevr_poc.evaluation.model_pool import ModelPool, ModelRecipe, predict_with
from clevr_poc.executors import ExecutorError

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "perception" / "dataset"  # 2 rendered questions, environments 5 and 6
MODEL = ROOT / "models" / "perception"


def perception_pipeline(path: str):
    """Module-level (picklable) recipe: NS-VQA from pixels with the shipped perception model, 1 thread."""
    import torch

    from clevr_poc.perception import Perception
    from clevr_poc.pipeline import Pipeline

    torch.set_num_threads(1)
    return Pipeline(Perception.from_pretrained(path, device="cpu"), name="NS-VQA (pixels)")


def gold_pipeline():
    from clevr_poc.pipeline import Pipeline

    return Pipeline.gold(name="gold")


def _fields(predictions) -> list[tuple]:
    return [(p.values, p.error, p.raw) for p in predictions]


def test_pool_routes_environments_and_answers_like_one_process():
    examples = list(load_dataset(FIXTURE, "test")) * 3  # 6 examples, 2 environments
    with ModelPool(ModelRecipe(gold_pipeline), workers=2) as pool:
        pooled = pool.predict_batch(examples)
        assert pool.name == "gold"
        workers = [pool.worker_of(e) for e in examples]
    assert workers == [0, 1] * 3  # one worker per environment, the same one on every call
    single = predict_with(gold_pipeline(), examples)
    assert _fields(pooled) == _fields(single)
    assert [p.values for p in pooled] == [e.question.answer for e in examples]


def test_pool_settings_are_checked():
    with pytest.raises(ExecutorError, match="workers must be a positive integer"):
        ModelPool(ModelRecipe(gold_pipeline), workers=0)
    with pytest.raises(ExecutorError, match="unknown executor"):
        ModelPool(ModelRecipe(gold_pipeline), workers=2, executor="dask")


@pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")
def test_evaluate_from_pixels_with_two_workers_writes_the_single_process_predictions(tmp_path):
    pytest.importorskip("torchvision")
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert cli_main(["evaluate", "--dataset", str(FIXTURE), "--split", "test", "--model", "ns-vqa",
                         "--scene", "perception", "--workers", str(workers), "--out", str(out), "--no-plots"]) == 0
        outputs[workers] = json.loads((out / "predictions.json").read_text())
    assert outputs[2] == outputs[1]
    assert len(outputs[1]) == 2


@pytest.mark.slow  # starting Ray takes 10-30 s here
@pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")
def test_ray_actors_give_the_local_predictions():
    pytest.importorskip("ray")
    pytest.importorskip("torchvision")
    examples = list(load_dataset(FIXTURE, "test"))
    recipe = ModelRecipe(perception_pipeline, (str(MODEL),))
    with ModelPool(recipe, workers=2, executor="ray") as pool:
        remote = pool.predict_batch(examples)
    assert _fields(remote) == _fields(predict_with(recipe.build(), examples))


@pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")
def test_answer_batch_in_worker_processes_gives_the_same_answers_and_errors():
    pytest.importorskip("torchvision")
    from clevr_poc.errors import UnsafeProgramError
    from clevr_poc.pipeline_inputs import PipelineInput

    examples = list(load_dataset(FIXTURE, "test"))
    pipeline = perception_pipeline(str(MODEL))
    single = pipeline.answer_batch(examples)
    pooled = pipeline.answer_batch(examples, workers=2)
    assert [(a.values, a.query, a.scene_facts) for a in pooled] == [(a.values, a.query, a.scene_facts) for a in single]
    assert [a.values for a in pooled] == [e.question.answer for e in examples]
    bad = PipelineInput(examples[1].image_path, examples[1].question, examples[1].environment,
                        query='missing(Q) :- #include "x".')
    with pytest.raises(UnsafeProgramError) as raised:
        pipeline.answer_batch([examples[0], bad], workers=2)
    assert raised.value.__notes__ == ["in item 1"]


class _PidModel:
    """Module-level test model: each answer is the set {worker pid, environment id}, after a pause that
    makes environment 5's questions slow."""

    name = "pid"

    def predict_batch(self, examples):
        import os
        import time

        from clevr_poc.evaluation.report import Prediction

        out = []
        for example in examples:
            time.sleep(0.05 if example.environment.id == 5 else 0.0)
            out.append(Prediction(frozenset({str(os.getpid()), f"env {example.environment.id}"})))
        return out


def _pid_model():
    return _PidModel()


def test_tasks_group_environments_and_pack_small_groups():
    from clevr_poc.evaluation.model_pool import _tasks

    class Item:
        def __init__(self, env):
            self.environment = type("E", (), {"id": env})()

    items = [Item(e) for e in (1, 1, 2, 1, 3, 1, 1, 2)]
    assert _tasks(list(range(8)), items, None) == [list(range(8))]
    assert _tasks(list(range(8)), items, 2) == [[0, 1], [3, 5], [6], [2, 7], [4]]
    assert _tasks(list(range(8)), items, 3) == [[0, 1, 3], [5, 6], [2, 7, 4]]
    assert _tasks([], items, 3) == []
    with pytest.raises(ExecutorError, match="task_size must be a positive integer"):
        ModelPool(ModelRecipe(gold_pipeline), workers=2, task_size=0)


def test_idle_worker_takes_waiting_tasks_of_the_other():
    examples = list(load_dataset(FIXTURE, "test"))
    slow = [e for e in examples if e.environment.id == 5] * 8   # one environment: routed to one worker
    with ModelPool(ModelRecipe(_pid_model), workers=2, task_size=1) as pool:
        pooled = pool.predict_batch(slow)
        assert {pool.worker_of(e) for e in slow} == {0}
    pids = {next(v for v in p.values if not v.startswith("env")) for p in pooled}
    assert len(pids) == 2   # both workers answered some
    assert all("env 5" in p.values for p in pooled)
    with ModelPool(ModelRecipe(_pid_model), workers=2) as pool:   # one task per worker: no stealing
        pids = {next(v for v in p.values if not v.startswith("env")) for p in pool.predict_batch(slow)}
    assert len(pids) == 1
