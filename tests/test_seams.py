"""The typed seams between stages (issue 23, part B): the parser, scene-source and model protocols, the
enums that replaced free strings, and the experiment that demo / evaluate / the notebooks share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc.dataset_reader import Example
from clevr_poc.errors import FormatError
from clevr_poc.evaluation import ExampleModel, FunctionModel, Model, Prediction, evaluate
from clevr_poc.experiment import SharedSteps, perception_summary, run_experiment
from clevr_poc.parsing import FunctionParser, ParseResult, QueryParser
from clevr_poc.perception.cameras import CAMERA_SOURCES, CameraSource, camera_spec, check_camera_source
from clevr_poc.perception.decoding import DecodingStatus, argmax_decode
from clevr_poc.pipeline import Pipeline
from clevr_poc.reasoning import Reasoner, ReasonerMode
from clevr_poc.scene_sources import GoldScenes, PerceivedScenes, SceneSource, SceneSourceKind

from clevr_poc.question import Question

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment

ROOT = Path(__file__).resolve().parent.parent


def appendix_a_example() -> Example:
    """The example of paper Appendix A (gold answer {small, medium}), without a rendered image."""
    complete = appendix_a_complete_scene()
    question = Question(
        text="There is another red rubber object that is the same shape as the big purple object; what size is it?",
        asp_query=APPENDIX_A_QUERY, answer=frozenset({"small", "medium"}), image_filename="CLEVR_test_000000.png",
        template_filename="same_relate.json", question_family_index=1, environment_id=0,
    )
    return Example(appendix_a_environment(), complete.without_object(4), question, complete)


# ---------------------------------------------------------------------------- enums
def test_modes_and_statuses_are_enums_that_read_and_write_their_strings():
    assert Reasoner(mode="direct").mode is ReasonerMode.DIRECT
    assert Reasoner().mode is ReasonerMode.COMPILED and Reasoner.MODES == ("compiled", "direct")
    with pytest.raises(ValueError, match="mode must be one of"):
        Reasoner(mode="fast")
    assert check_camera_source("from-scene") is CameraSource.FROM_SCENE
    assert CAMERA_SOURCES == ("auto", "from-scene", "official", "ours")
    with pytest.raises(FormatError, match="unknown camera source"):
        check_camera_source("left")
    assert camera_spec(None, CameraSource.OURS) == "ours" and type(camera_spec(None, "official")) is str
    decoded = argmax_decode([])
    assert decoded.status is DecodingStatus.ARGMAX
    assert json.dumps({"decoding": decoded.status}) == '{"decoding": "argmax"}' and f"{decoded.status}" == "argmax"


# ---------------------------------------------------------------------------- parsers
def test_every_parser_returns_parse_results():
    assert isinstance(FunctionParser(lambda q: "x"), QueryParser)
    results = FunctionParser(lambda q: None if "?" in q else "missing(Q) :- hasProperty(X,color,Q).",
                             name="table").parse_queries(["a", "b?"])
    assert results[0] == ParseResult("missing(Q) :- hasProperty(X,color,Q).", "missing(Q) :- hasProperty(X,color,Q).",
                                     None)
    assert results[1].asp_query is None and results[1].error == "the parser returned no text"
    pipeline = Pipeline.gold(lambda text: None)
    assert isinstance(pipeline.parser, FunctionParser) and pipeline.parser_name == "<lambda>"


def test_the_bilstm_parser_is_a_query_parser():
    pytest.importorskip("torch")
    from clevr_poc.parsing.seq2seq import BiLSTMParser

    parser = BiLSTMParser.from_pretrained(ROOT / "models" / "parser_bilstm")
    assert isinstance(parser, QueryParser) and parser.name == "BiLSTM"
    question = "What color is the large cube?"
    (result,) = parser.parse_queries([question])
    assert isinstance(result, ParseResult) and result.ok and result.asp_query == parser.parse(question)
    assert Pipeline.gold(parser).name == "NS-VQA (gold scene, BiLSTM)"


def test_the_llm_parser_is_a_query_parser():
    from clevr_poc.parsing.llm_parser import LLMParser

    class Backend:
        name = "scripted"

        def complete(self, messages, **kwargs):
            return "### missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cube). ###"

    parser = LLMParser(Backend())
    assert isinstance(parser, QueryParser) and parser.name == "LLM scripted"
    (result,) = parser.parse_queries(["What color is the cube?"])
    assert result.ok and result.attempts == 1 and result.replies


# ---------------------------------------------------------------------------- models and scene sources
def test_the_evaluator_calls_models_through_the_model_protocol():
    example = appendix_a_example()

    class OnlyPredict:  # the old duck-typed protocol is not a model any more
        name = "old"

        def predict(self, example):
            return {"red"}

    with pytest.raises(TypeError, match="not an evaluator model"):
        evaluate(OnlyPredict(), [example], progress=False)
    report = evaluate(FunctionModel(lambda e: set(e.question.answer), name="oracle"), [example], progress=False)
    assert report.model == "oracle" and report.exact_accuracy == 1.0
    assert isinstance(Pipeline.gold(), Model) and isinstance(FunctionModel(print), ExampleModel)


def test_scene_sources():
    example = appendix_a_example()
    assert isinstance(GoldScenes(), SceneSource) and GoldScenes().scene_of(example) is example.partial_scene
    seen = []

    def perception(image, camera, environment):
        seen.append((image, camera, environment))
        return example.partial_scene

    source = PerceivedScenes(perception, camera_source="ours", constraint_decoding=False)
    assert source.kind is SceneSourceKind.PERCEPTION and source.camera_source is CameraSource.OURS
    with pytest.raises(FormatError, match="no rendered image"):
        source.scene_of(example)
    rendered = Example(example.environment, example.partial_scene, example.question, image_path=Path("x.png"))
    assert source.scene_of(rendered) is example.partial_scene and seen == [(Path("x.png"), "ours", None)]
    assert Pipeline(perception).scene_source == "perception" and Pipeline().scene_source == "given"


# ---------------------------------------------------------------------------- the experiment
def test_an_experiment_perceives_and_parses_each_example_once():
    example = appendix_a_example()
    rendered = Example(example.environment, example.partial_scene, example.question, image_path=Path("x.png"))
    calls = {"perceive": 0, "parse": 0}

    def perception(image, camera, environment):
        calls["perceive"] += 1
        return example.partial_scene

    class Parser:
        name = "counting"

        def parse_queries(self, questions):
            calls["parse"] += len(questions)
            return [ParseResult(example.question.asp_query, "", None) for _ in questions]

    shared = SharedSteps(Pipeline(perception, Parser()))
    models = [shared.pipeline("pixels"), shared.pipeline("gold scene", perceived=False),
              shared.pipeline("pixels again"), shared.pipeline("gold", perceived=False, parsed=False)]
    result = run_experiment(models, [rendered, rendered], shared=shared, split="test")
    assert calls == {"perceive": 1, "parse": 1}   # one example object, one question text
    assert list(result.reports()) == ["pixels", "gold scene", "pixels again", "gold"]
    assert all(run.report.exact_accuracy == 1.0 and run.asked == 2 for run in result.runs)
    assert result.scenes == (example.partial_scene,) * 2 and result.queries == (example.question.asp_query,) * 2
    assert set(result.timings) == {"parse", "pixels", "gold scene", "pixels again", "gold"}
    summary = perception_summary(result.scenes, [example.partial_scene] * 2)
    assert summary.to_json() == {"scenes": 2, "right_count": 2, "exact_scenes": 2,
                                 "objects": 2 * len(example.partial_scene),
                                 "objects_found": 2 * len(example.partial_scene)}
    with pytest.raises(ValueError, match="share a name"):
        run_experiment([Pipeline.gold(), Pipeline.gold()], [example])


def test_a_failed_perception_is_shared_as_a_failure():
    example = appendix_a_example()
    rendered = Example(example.environment, example.partial_scene, example.question, image_path=Path("x.png"))
    calls = []

    def broken(image, camera, environment):
        calls.append(image)
        raise FormatError("cannot read the image", source=image)

    shared = SharedSteps(Pipeline(broken))
    result = run_experiment([shared.pipeline("a"), shared.pipeline("b")], [rendered], shared=shared)
    assert len(calls) == 1 and result.scenes == (None,)
    for run in result.runs:
        (scored,) = run.report.results
        assert scored.predicted is None and scored.error.startswith("perception failed: x.png: cannot read")


def test_prediction_is_unchanged_by_the_protocols():
    example = appendix_a_example()
    (prediction,) = Pipeline.gold().predict_batch([example])
    assert prediction == Prediction(example.question.answer, None, example.question.asp_query)


# ---------------------------------------------------------------------------- render settings
def test_one_settings_value_for_rendering():
    from clevr_poc.errors import RenderError
    from clevr_poc.render_settings import DEFAULT_STYLE_NAME, RenderSettings
    from clevr_poc.rendering.styles import DEFAULT_STYLE
    from clevr_poc.scene_metadata import RenderInfo

    assert DEFAULT_STYLE_NAME == DEFAULT_STYLE
    settings = RenderSettings().with_overrides(samples=4, assets=Path("data"))
    assert settings.samples == 4 and settings.assets == "data" and settings.style == "official"
    with pytest.raises(RenderError, match="unknown render setting"):
        RenderSettings().with_overrides(sample=4)
    used = RenderSettings(width=320, height=320, samples=4, colour_space="linear", camera_jitter=0.0,
                          light_jitter=0.0, cone_lift=0.118, denoise=True, adaptive=False)
    info = RenderInfo.of(used, 7, {"key": (1.23456789, 2.0, 3.0)})
    assert list(info.to_json()) == ["engine", "samples", "denoise", "adaptive", "seed", "width", "height", "lights",
                                    "style", "colour_space", "camera_jitter", "light_jitter", "cone_lift", "assets"]
    assert info.lights == {"key": [1.234568, 2.0, 3.0]} and info.seed == 7
    again = info.settings
    assert (again.style, again.width, again.samples, again.adaptive, again.cone_lift) == ("official", 320, 4, False,
                                                                                        0.118)
    assert "style" not in RenderInfo.of(used, 7, {}, with_style=False).to_json()


def test_render_tasks_carry_the_settings_value(tmp_path):
    from clevr_poc.generation.dataset_writer import generate_dataset
    from clevr_poc.render_settings import RenderSettings
    from clevr_poc.rendering.batch_render import plan_tasks

    generate_dataset(tmp_path, environments=1, scenes_per_environment=2, seed=3, splits={"test": 1.0},
                     progress=False)
    settings = RenderSettings(samples=2, style="ours")
    tasks, done = plan_tasks(tmp_path, settings=settings)
    assert done == 0 and len(tasks) == 2 and all(task.settings is settings for task in tasks)
