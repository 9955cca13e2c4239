"""NS-VQA with the perception scene source: pixels -> shipped perception model -> Reasoner."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")

from clevr_poc.baselines.ns_vqa import NSVQA, PerceptionSource  # noqa: E402
from clevr_poc.dataset import load_dataset  # noqa: E402
from clevr_poc.evaluation import evaluate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "perception" / "dataset"
MODEL = ROOT / "models" / "perception"


@pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")
def test_ns_vqa_from_pixels_answers_the_fixture_questions():
    examples = list(load_dataset(FIXTURE, "test"))
    assert len(examples) == 2
    model = NSVQA(scene=PerceptionSource(MODEL))
    report = evaluate(model, examples, progress=False)
    # the perceived scenes of both fixture images are right, so both answers equal the gold ones
    assert report.summary() == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 2}
    assert model.scene_of(examples[0]).objects  # a Scene, not a failed prediction


def test_missing_camera_is_a_counted_failure(tmp_path):
    examples = list(load_dataset(FIXTURE, "test"))
    example = examples[0]
    stripped = example.partial_scene.__class__(
        example.partial_scene.objects, example.partial_scene.relationships,
        extra={k: v for k, v in example.partial_scene.extra.items() if k != "camera"})
    broken = example.__class__(**{**example.__dict__, "partial_scene": stripped}) \
        if hasattr(example, "__dict__") else example._replace(partial_scene=stripped)

    class NoModel:  # never called: the camera check fails first
        def __call__(self, *args):
            raise AssertionError("perception must not run without a camera")

    prediction = NSVQA(scene=PerceptionSource(NoModel())).predict_detailed(broken)
    assert prediction.values is None and "camera" in prediction.error
