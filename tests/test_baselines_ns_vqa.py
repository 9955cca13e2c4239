"""NS-VQA wrapper: gold sources reproduce the labels; parser/perception failures are counted parse failures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from clevr_poc.baselines import NSVQA
from clevr_poc.environments import Environment
from clevr_poc.errors import FormatError
from clevr_poc.evaluation import evaluate
from clevr_poc.question import Question
from clevr_poc.scene import Scene

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment


@dataclass(frozen=True)
class Example:
    environment: Environment
    partial_scene: Scene
    question: Question
    complete_scene: Scene | None = None
    image_path: Any = None


def appendix_a_example(image_path: str = "CLEVR_test_000000.png") -> Example:
    complete = appendix_a_complete_scene()
    question = Question(
        text="There is another red rubber object that is the same shape as the big purple object; what size is it?",
        asp_query=APPENDIX_A_QUERY, answer=frozenset({"small", "medium"}), image_filename="CLEVR_test_000000.png",
        template_filename="same_relate.json", question_family_index=1, environment_id=0,
    )
    return Example(appendix_a_environment(), complete.without_object(4), question, complete, image_path)


def test_gold_scene_gold_query_answers_the_appendix_example():
    model = NSVQA()
    prediction = model.predict_detailed(appendix_a_example())
    assert prediction.values == frozenset({"small", "medium"}) and prediction.error is None
    assert prediction.raw == APPENDIX_A_QUERY
    report = evaluate(model, [appendix_a_example()], progress=False)
    assert (report.exact_accuracy, report.jaccard, report.parse_failures) == (1.0, 1.0, 0)
    assert report.model == "NS-VQA (gold scene, gold ASP)"


def test_parser_outputs():
    example = appendix_a_example()
    # a query with the paper's unknown/1 head and a wrong attribute: parsed, but a wrong answer set
    wrong = NSVQA(query=lambda text: "unknown(Q) :- hasProperty(X,material,Q), hasProperty(X,color,red).")
    assert wrong.predict(example) == frozenset({"rubber", "metal"})
    # a program that would run Python inside clingo: rejected, counted as a parse failure
    unsafe = NSVQA(query=lambda text: '#script (python) import os #end. missing(Q) :- hasProperty(X,size,Q).')
    prediction = unsafe.predict_detailed(example)
    assert prediction.values is None and prediction.error.startswith("unsafe or invalid ASP query")
    assert "#script" in prediction.error
    syntax = NSVQA(query=lambda text: "missing(Q) :- hasProperty(X,size,Q")
    assert syntax.predict(example) is None
    nothing = NSVQA(query=lambda text: None)
    assert nothing.predict_detailed(example).error == "question parser produced no ASP query"

    def failing(text):
        raise FormatError("vocabulary miss", field="token", value="blorp")

    assert NSVQA(query=failing).predict_detailed(example).error == \
        "question parser failed: field token: vocabulary miss (got 'blorp')"
    report = evaluate(unsafe, [example], progress=False)
    assert report.parse_failures == 1 and report.exact_accuracy == 0.0
    assert list(report.failure_reasons())[0].startswith("unsafe or invalid ASP query")


def test_perception_outputs():
    example = appendix_a_example(image_path="images/CLEVR_test_000000.png")
    seen = []

    def perceive(path):
        seen.append(path)
        return appendix_a_complete_scene().without_object(4)

    assert NSVQA(scene=perceive).predict(example) == frozenset({"small", "medium"})
    assert seen == ["images/CLEVR_test_000000.png"]
    # a perception that sees the hidden object too (nothing hidden): only the visible red sphere's size
    assert NSVQA(scene=lambda path: appendix_a_complete_scene()).predict(example) == frozenset({"small"})
    # more objects than the environment declares
    big = appendix_a_complete_scene()
    six = Scene(big.objects + (big.objects[0],), {})
    assert NSVQA(scene=lambda path: six).predict_detailed(example).error.startswith("scene does not fit")
    assert NSVQA(scene=lambda path: None).predict_detailed(example).error == "perception produced no scene"


def test_unsatisfiable_program_is_an_empty_prediction_not_a_failure():
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), hasProperty(X,size,small)."
    prediction = NSVQA(query=lambda text: query).predict_detailed(appendix_a_example())
    assert prediction.values == frozenset() and prediction.error is None


def test_bad_sources():
    with pytest.raises(ValueError, match="scene source"):
        NSVQA(scene="detectron")
    with pytest.raises(ValueError, match="query source"):
        NSVQA(query=42)


def test_gold_ns_vqa_scores_exactly_one_on_a_generated_split(tmp_path):
    """Self-check of the generator, the loader and the reasoner: gold scene + gold ASP reproduces every label."""
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.evaluation import score_predictions
    from clevr_poc.generation.dataset_writer import generate_dataset

    out = tmp_path / "data"
    generate_dataset(out, environments=2, scenes_per_environment=4, seed=11, splits={"train": 0.5, "test": 0.5},
                     progress=False)
    examples = list(load_dataset(out, "test"))
    assert len(examples) == 4
    report = evaluate(NSVQA(), examples, progress=False, split="test")
    assert (report.exact_accuracy, report.jaccard, report.parse_failures, report.n) == (1.0, 1.0, 0, 4)
    assert "unknown" not in report.breakdown("family") and "unknown" not in report.breakdown("template")
    assert set(report.breakdown("environment")) == {"0", "1"}
    # the exported predictions score the same in scoring-only mode
    again = score_predictions(examples, report.predictions())
    assert (again.exact_accuracy, again.jaccard) == (1.0, 1.0)
