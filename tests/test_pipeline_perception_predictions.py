"""The Pipeline as the NS-VQA evaluator model from pixels: dataset examples -> shipped perception model ->
Reasoner, with the example's camera chosen by the camera source."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")

from clevr_poc.dataset_reader import load_dataset  # noqa: E402
from clevr_poc.evaluation import evaluate  # noqa: E402
from clevr_poc.perception import Perception  # noqa: E402
from clevr_poc.pipeline import Pipeline  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "perception" / "dataset"
MODEL = ROOT / "models" / "perception"


@pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")
def test_ns_vqa_from_pixels_answers_the_fixture_questions():
    examples = list(load_dataset(FIXTURE, "test"))
    assert len(examples) == 2
    model = Pipeline(Perception.from_pretrained(MODEL))
    report = evaluate(model, examples, progress=False)
    # the perceived scenes of both fixture images are right, so both answers equal the gold ones
    assert report.summary() == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 2}
    assert model.scene_of(examples[0]).objects  # a Scene, not None


def test_a_scene_without_camera_gets_the_official_camera_unless_from_scene_is_asked(tmp_path):
    examples = list(load_dataset(FIXTURE, "test"))
    example = examples[0]
    stripped = dataclasses.replace(example.partial_scene, image=None)
    broken = example.__class__(**{**example.__dict__, "partial_scene": stripped})
    calls = []

    class Recorder:  # records the camera perception is given
        def __call__(self, image, camera, environment=None):
            calls.append(camera)
            return stripped

    prediction = Pipeline(Recorder()).predict_detailed(broken)
    assert calls == ["official"] and prediction.error is None       # the release's images: official camera
    Pipeline(Recorder()).predict_detailed(example)
    assert calls[-1].width == 320 and calls[-1].height == 240         # a rendered scene: its own camera
    Pipeline(Recorder(), camera_source="ours").predict_detailed(example)
    assert calls[-1] == "ours"
    prediction = Pipeline(Recorder(), camera_source="from-scene").predict_detailed(broken)
    assert prediction.values is None and "has no camera" in prediction.error and len(calls) == 3
