"""The end-to-end Pipeline (clevr_poc.pipeline) and the ``demo`` command.

Most tests use ``scene_source="given"`` (gold partial scenes; neither torch nor bpy) on the paper's
Appendix A example and on a tiny generated dataset; the perception-backed test runs the shipped
checkpoints on a rendered fixture image and skips when torch or a checkpoint is missing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clevr_poc import Pipeline
from clevr_poc.environments import Environment
from clevr_poc.errors import ClevrPocError, FormatError, UnsafeProgramError
from clevr_poc.examples import example_dir, load_example
from clevr_poc.pipeline import (
    CheckpointNotFoundError, PipelineError, PipelineInput, QuestionParseError, as_camera, as_image,
    check_checkpoints, default_models_dir,
)
from clevr_poc.question import Question
from clevr_poc.rendering.geometry import Camera, default_camera
from clevr_poc.scene import Scene
from clevr_poc.scene_metadata import ImageInfo

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pipeline"
APPENDIX_A = example_dir("appendix_a")


@pytest.fixture(scope="module")
def gold() -> Pipeline:
    return Pipeline.from_pretrained(scene_source="given", parser="given")


# ---------------------------------------------------------------------- import hygiene
def test_import_clevr_poc_imports_neither_torch_nor_bpy():
    code = ("import sys, clevr_poc; assert 'torch' not in sys.modules and 'bpy' not in sys.modules; "
            "p = clevr_poc.Pipeline.from_pretrained(scene_source='given', parser='given'); "
            "from clevr_poc import Pipeline; assert Pipeline is clevr_poc.pipeline.Pipeline; "
            "assert 'torch' not in sys.modules and 'bpy' not in sys.modules; print(p.name)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "NS-VQA (given scene, gold ASP)"


def test_unknown_attribute_of_the_package():
    import clevr_poc

    with pytest.raises(AttributeError, match="NoSuchThing"):
        clevr_poc.NoSuchThing  # noqa: B018


# ---------------------------------------------------------------------- answering with a given scene
def test_appendix_a_with_files_gives_the_answer_explanation_query_and_facts(gold):
    answer = gold.answer(None, Question.from_file(APPENDIX_A / "question.json"), APPENDIX_A / "environment.lp",
                         scene=APPENDIX_A / "scene.json")
    assert answer.values == frozenset({"small", "medium"})
    assert answer.attribute == "size"
    assert answer.query.startswith("missing(Q) :- hasProperty(X,size,Q)")
    assert "hasProperty(0,color,purple)." in answer.scene_facts and "at(0,1)." in answer.scene_facts
    explanation = answer.explanation
    assert [w.value for w in explanation.kept] == ["small", "medium"]
    (large,) = explanation.eliminated
    assert large.value == "large"
    assert 0 in large.constraints  # "No object in region 0 has size large."
    assert "No object in region 0 has size large." in large.texts


def test_objects_and_explain_off(gold):
    environment, scene, question = load_example("appendix_a")
    answer = gold.answer(question=question, environment=environment, scene=scene.to_json(), explain=False)
    assert answer.values == frozenset({"small", "medium"}) and answer.explanation is None


def test_query_overrides_the_parser(gold):
    environment, scene, question = load_example("appendix_a")
    query = "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,shape,cone)."
    answer = gold.answer(question="ignored text", environment=environment, scene=scene, query=query)
    # no cone is visible; the hidden one cannot be in region 0 or 1 (no cones there), and regions 2 and 3
    # leave it large or medium
    assert answer.values == frozenset({"large", "medium"}) and answer.query == query
    with pytest.raises(UnsafeProgramError):
        gold.answer(environment=environment, scene=scene, query="missing(Q) :- #include \"x\".")


def test_answer_batch_accepts_dicts_tuples_and_inputs(gold):
    environment, scene, question = load_example("appendix_a")
    items = [
        {"question": question, "environment": environment, "scene": scene},
        (None, question, APPENDIX_A / "environment.lp", APPENDIX_A / "scene.json"),
        PipelineInput(question=question, environment=environment, scene=scene,
                      query="missing(Q) :- hasProperty(X,size,Q), hasProperty(X,shape,cone)."),
    ]
    answers = gold.answer_batch(items)
    assert [a.values for a in answers] == [frozenset({"small", "medium"})] * 2 + [frozenset({"large", "medium"})]
    assert all(a.explanation is None for a in answers)
    assert gold.answer_batch([items[0]], explain=True)[0].explanation is not None


def test_answer_batch_names_the_failing_item(gold):
    environment, scene, question = load_example("appendix_a")
    good = {"question": question, "environment": environment, "scene": scene}
    with pytest.raises(FormatError) as info:
        gold.answer_batch([good, {"question": "What size is it?", "environment": environment, "scene": scene}])
    assert "in item 1" in info.value.__notes__
    with pytest.raises(FormatError) as info:
        gold.answer_batch([good, good, {"question": question, "environment": 42, "scene": scene}])
    assert "in item 2" in info.value.__notes__
    with pytest.raises(FormatError, match="unknown keys"):
        gold.answer_batch([{"question": question, "env": environment}])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"environment": None}, FormatError, "environment"),
    ({"environment": "no/such/file.lp"}, FormatError, "environment file not found"),
    ({"scene": 3.5}, FormatError, "a scene is"),
    ({"scene": "no/such/scene.json"}, FormatError, "scene.json"),
    ({"question": None}, FormatError, "no question"),
    ({"question": "What size is the red thing?"}, FormatError, "no question parser"),
    ({"query": ""}, FormatError, "query must be"),
])
def test_bad_inputs_give_typed_errors(gold, kwargs, error, message):
    environment, scene, question = load_example("appendix_a")
    arguments = {"question": question, "environment": environment, "scene": scene, **kwargs}
    with pytest.raises(error, match=message):
        gold.answer(**arguments)


def test_given_scene_pipeline_needs_a_scene(gold):
    environment, _, question = load_example("appendix_a")
    with pytest.raises(PipelineError, match="pass the partial scene"):
        gold.answer(np.zeros((240, 320, 3), np.uint8), question, environment)
    with pytest.raises(PipelineError, match="no perception model"):
        gold.perceive(np.zeros((240, 320, 3), np.uint8), default_camera())


def test_too_many_objects_is_a_format_error(gold):
    environment, scene, question = load_example("appendix_a")
    small = Environment(environment.constraints, len(scene) - 1)
    with pytest.raises(FormatError, match="objects"):
        gold.answer(question=question, environment=small, scene=scene)


# ---------------------------------------------------------------------- custom and LLM parsers
def test_callable_parser():
    environment, scene, question = load_example("appendix_a")
    seen = []

    def parser(text: str) -> str:
        seen.append(text)
        return question.asp_query

    pipeline = Pipeline(None, parser, name="lookup")
    answer = pipeline.answer(question=question.text, environment=environment, scene=scene)
    assert answer.values == frozenset({"small", "medium"}) and seen == [question.text]
    assert pipeline.name == "lookup" and pipeline.scene_source == "given"
    with pytest.raises(FormatError, match="non-empty string"):
        pipeline.answer(question="   ", environment=environment, scene=scene)
    with pytest.raises(PipelineError, match="parse"):
        Pipeline(None, object())


def test_llm_parser_through_a_real_chat_server():
    pytest.importorskip("openai")
    from clevr_poc.llm import OpenAIChatBackend
    from clevr_poc.llm.testing import ChatCompletionsServer

    environment, scene, question = load_example("appendix_a")

    def reply(messages):
        return f"### {question.asp_query} ###" if "red rubber" in messages[-1]["content"] else "I do not know."

    with ChatCompletionsServer(reply) as server:
        backend = OpenAIChatBackend(model="pipeline-test", base_url=server.base_url, max_retries=0, timeout=10)
        pipeline = Pipeline.from_pretrained(scene_source="given", parser="llm", llm_backend=backend)
        answer = pipeline.answer(question=question.text, environment=environment, scene=scene)
        assert answer.values == frozenset({"small", "medium"})
        with pytest.raises(QuestionParseError, match="no ASP query"):
            pipeline.answer(question="What color is the cube?", environment=environment, scene=scene)
    assert pipeline.parser_name.startswith("LLM")


# ---------------------------------------------------------------------- checkpoints and settings
def test_missing_checkpoints_name_the_path_and_how_to_get_them(tmp_path):
    (tmp_path / "perception").mkdir()
    with pytest.raises(CheckpointNotFoundError) as info:
        Pipeline.from_pretrained(tmp_path)
    assert info.value.path == tmp_path / "perception" / "perception.pt"
    assert "python -m clevr_poc.perception train" in str(info.value)
    with pytest.raises(CheckpointNotFoundError) as info:
        Pipeline.from_pretrained(tmp_path, scene_source="given")
    assert info.value.path == tmp_path / "parser_bilstm"
    assert "python -m clevr_poc.train_parser" in str(info.value)
    with pytest.raises(CheckpointNotFoundError, match="models folder not found"):
        Pipeline.from_pretrained(tmp_path / "nothing")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ClevrPocError)
    assert check_checkpoints(tmp_path / "nothing", scene_source="given", parser="given") == {}


def test_perception_path_may_name_the_model_file(tmp_path):
    model_file = ROOT / "models" / "perception" / "perception.pt"
    found = check_checkpoints(perception_path=model_file, parser="given")
    assert found == {"perception": model_file}
    with pytest.raises(CheckpointNotFoundError, match="perception checkpoint folder"):
        check_checkpoints(perception_path=tmp_path / "missing.pt", parser="given")


def test_failed_evaluate_removes_the_out_folder_it_created(tmp_path, capsys):
    from clevr_poc.commands.main import main

    out = tmp_path / "report"
    bad = tmp_path / "predictions.json"
    bad.write_text("not json")
    assert main(["evaluate", "--dataset", str(ROOT / "tests" / "fixtures" / "perception" / "dataset"), "--split",
                 "test", "--predictions", str(bad), "--out", str(out)]) == 1
    assert "invalid JSON" in capsys.readouterr().err and not out.exists()


def test_models_folder_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CLEVR_POC_MODELS", str(tmp_path))
    assert default_models_dir() == tmp_path
    monkeypatch.delenv("CLEVR_POC_MODELS")
    assert default_models_dir() == ROOT / "models" or not (ROOT / "models").is_dir()


def _installed_layout(root: Path, *, with_models: bool) -> Path:
    """A site-packages-like folder: ``clevr_poc/`` (and its ``models/`` when asked), no ``pyproject.toml``,
    and an unrelated ``models/`` beside the package (another distribution's)."""
    package = root / "site" / "clevr_poc"
    package.mkdir(parents=True)
    (root / "site" / "models").mkdir()
    if with_models:
        for kind, files in (("perception", ("perception.pt",)),
                            ("parser_bilstm", ("config.json", "vocab.json", "weights.pt"))):
            (package / "models" / kind).mkdir(parents=True)
            for name in files:
                (package / "models" / kind / name).write_bytes(b"")
    (root / "elsewhere").mkdir()
    return package


def test_installed_package_finds_the_models_it_ships_from_any_folder(tmp_path, monkeypatch):
    """A non-editable install ships ``models/`` as ``clevr_poc/models`` (pyproject force-include); the
    resolver finds it from any working directory, never ``site-packages/models``."""
    import tomllib

    from clevr_poc import model_folders

    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"]["models"] == "clevr_poc/models"
    package = _installed_layout(tmp_path, with_models=True)
    monkeypatch.setattr(model_folders, "_PACKAGE", package)
    monkeypatch.delenv("CLEVR_POC_MODELS", raising=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert model_folders.models_dir_candidates() == (package / "models", tmp_path / "elsewhere" / "models")
    assert default_models_dir() == package / "models"
    assert check_checkpoints() == {"perception": package / "models" / "perception",
                                   "parser_bilstm": package / "models" / "parser_bilstm"}


def test_missing_default_models_list_the_folders_searched_and_the_option_to_use(tmp_path, monkeypatch):
    from clevr_poc import model_folders

    package = _installed_layout(tmp_path, with_models=False)
    monkeypatch.setattr(model_folders, "_PACKAGE", package)
    monkeypatch.delenv("CLEVR_POC_MODELS", raising=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    searched = f"searched {package / 'models'}, {tmp_path / 'elsewhere' / 'models'} ("
    with pytest.raises(CheckpointNotFoundError) as info:
        Pipeline.from_pretrained()
    assert searched in str(info.value) and "from_pretrained(path) or perception_path=" in str(info.value)
    assert info.value.searched == (package / "models", tmp_path / "elsewhere" / "models")
    with pytest.raises(CheckpointNotFoundError) as info:
        check_checkpoints(scene_source="given",
                          options={"perception": "--perception-path DIR", "parser_bilstm": "--parser-path DIR"})
    assert searched in str(info.value) and "point --parser-path DIR or CLEVR_POC_MODELS" in str(info.value)


def test_demo_without_models_names_its_own_option(tmp_path, monkeypatch, capsys):
    """demo has ``--models`` (not ``--perception-path``): its error says so."""
    from clevr_poc import model_folders
    from clevr_poc.commands import demo_command
    from clevr_poc.commands.main import main

    package = _installed_layout(tmp_path, with_models=False)
    monkeypatch.setattr(model_folders, "_PACKAGE", package)
    monkeypatch.setattr(demo_command, "check_requirements", lambda: None)
    monkeypatch.delenv("CLEVR_POC_MODELS", raising=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 1
    err = capsys.readouterr().err
    assert f"models folder not found: searched {package / 'models'}" in err
    assert "point --models DIR or CLEVR_POC_MODELS" in err and "--perception-path" not in err
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"scene_source": "pixels"}, "scene_source"),
    ({"parser": "gpt"}, "parser must be one of"),
    ({"parser": "given", "llm_backend": "local"}, "llm_backend"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(PipelineError, match=message):
        Pipeline.from_pretrained(**{"scene_source": "given", **kwargs})


# ---------------------------------------------------------------------- input coercion
def test_as_image_accepts_arrays_pil_and_files(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    assert np.array_equal(as_image(rgb), rgb) and as_image(rgb).dtype == np.uint8
    rgba = np.concatenate([rgb, np.full((24, 32, 1), 255, np.uint8)], axis=2)
    assert np.array_equal(as_image(rgba), rgb)
    assert np.array_equal(as_image(rgb / 255.0), rgb)
    Image = pytest.importorskip("PIL.Image")
    assert np.array_equal(as_image(Image.fromarray(rgb)), rgb)
    Image.fromarray(rgb).save(tmp_path / "x.png")
    assert np.array_equal(as_image(tmp_path / "x.png"), rgb)
    assert np.array_equal(as_image(str(tmp_path / "x.png")), rgb)
    (tmp_path / "bad.png").write_text("not an image")
    with pytest.raises(FormatError, match="cannot read the image"):
        as_image(tmp_path / "bad.png")


@pytest.mark.parametrize("image, message", [
    (None, "an image is"),
    ("no/such/image.png", "image file not found"),
    (np.zeros((24, 32), np.uint8), r"shape \(H, W, 3\)"),
    (np.zeros((24, 32, 3), np.int64), "uint8"),
    (np.full((24, 32, 3), 2.0), r"in \[0, 1\]"),
    ([[0, 0, 0]], "an image is"),
])
def test_as_image_rejects(image, message):
    with pytest.raises(FormatError, match=message):
        as_image(image)


def test_as_camera_from_camera_json_scene_and_file(tmp_path):
    camera = default_camera(320, 240)
    assert as_camera(camera) is camera
    assert as_camera(camera.to_json()) == camera
    scene = Scene((), {}, image=ImageInfo(camera))
    assert as_camera(scene) == camera
    assert as_camera(scene.to_json()) == camera
    path = scene.to_file(tmp_path / "scene.json")
    assert as_camera(path) == camera and as_camera(str(path)) == camera
    # a scene without a camera (never rendered, or the official release's) and None: the official camera,
    # unless the camera source says otherwise
    assert as_camera(APPENDIX_A / "scene.json") == "official" == as_camera(None)
    assert as_camera(path, "official") == "official" and as_camera("ours") == "ours"
    with pytest.raises(FormatError, match="the scene has no camera"):
        as_camera(APPENDIX_A / "scene.json", "from-scene")
    with pytest.raises(FormatError, match="unknown camera source"):
        as_camera(None, "fisheye")
    with pytest.raises(FormatError, match="a camera is"):
        as_camera(3)
    with pytest.raises(FormatError, match="K must be 3x3"):
        as_camera({"K": [[0, 0, 0], [0, 0, 0], [0, 0, 1]], "world_to_camera": np.eye(4).tolist(),
                   "image_size": [320, 240]})


def test_pipeline_input_from_a_dataset_example():
    from clevr_poc.dataset_reader import Example

    environment, scene, question = load_example("appendix_a")
    rendered = Scene(scene.objects, scene.relationships, image=ImageInfo(default_camera()))
    example = Example(environment, rendered, question, None, Path("image.png"))
    given = PipelineInput.of(example, scene_given=True)
    assert given.scene is rendered and given.camera is rendered and given.image == Path("image.png")
    assert PipelineInput.of(example).scene is None
    assert PipelineInput.of(Example(environment, scene, question)).camera is scene  # its camera source decides
    with pytest.raises(FormatError, match="an item is"):
        PipelineInput.of("question")


# ---------------------------------------------------------------------- a pipeline is an evaluator model
@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    from clevr_poc.generation.dataset_writer import generate_dataset

    out = tmp_path_factory.mktemp("tiny") / "data"
    generate_dataset(out, environments=2, scenes_per_environment=2, seed=3, splits={"test": 1.0}, progress=False)
    return out


def test_evaluate_the_gold_pipeline_on_generated_data_scores_one(tiny_dataset, gold):
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.evaluation import evaluate

    examples = list(load_dataset(tiny_dataset, "test"))
    report = evaluate(gold, examples, progress=False)
    assert report.n == 4 and report.exact_accuracy == 1.0 and report.jaccard == 1.0
    assert report.model == "NS-VQA (given scene, gold ASP)"
    answers = gold.answer_batch(examples)
    assert [a.values for a in answers] == [e.question.answer for e in examples]


def test_perception_pipeline_reports_failures_as_predictions(tiny_dataset):
    """A perception pipeline on unrendered examples: every prediction fails with a reason, no exception."""
    from clevr_poc.dataset_reader import load_dataset

    def perception(image, camera, environment=None):  # never reached: there is no image
        raise AssertionError("perception called without an image")

    pipeline = Pipeline(perception, None)
    predictions = pipeline.predict_batch(list(load_dataset(tiny_dataset, "test")))
    assert [p.values for p in predictions] == [None] * 4
    assert all(p.error.startswith("perception failed") and "has no rendered image" in p.error for p in predictions)


def test_perceive_fits_the_camera_to_the_image():
    calls = []

    def perception(image, camera, environment=None):
        calls.append((image.shape, camera.width, environment))
        return Scene(())

    pipeline = Pipeline(perception, None)
    environment, _, question = load_example("appendix_a")
    camera = default_camera(320, 240)
    answer = pipeline.answer(np.zeros((240, 320, 3), np.uint8), question, environment, camera=camera,
                             explain=False)
    assert calls == [((240, 320, 3), 320, environment)]  # constraint-aware decoding gets the environment
    assert answer.scene_facts.strip() == ""  # the perceived scene is empty
    with pytest.raises(FormatError, match="made for 320x240 images but the image is 100x100"):
        pipeline.answer(np.zeros((100, 100, 3), np.uint8), question, environment, camera=camera)
    Pipeline(perception, None, constraint_decoding=False).perceive(np.zeros((240, 320, 3), np.uint8), camera,
                                                                   environment)
    assert calls[-1][2] is None
    # a resized image: the camera's intrinsics scale with it
    captured = []
    Pipeline(lambda image, cam, environment=None: captured.append(cam) or Scene(())).perceive(
        np.zeros((480, 640, 3), np.uint8), camera)
    assert captured[0].width == 640 and captured[0].K[0, 0] == pytest.approx(2 * camera.K[0, 0])
    # no camera: the official preset at the image's size; the pipeline's camera source can force another
    pipeline.perceive(np.zeros((320, 320, 3), np.uint8))
    assert calls[-1][1] == 320
    captured.clear()
    Pipeline(lambda image, cam, environment=None: captured.append(cam) or Scene(()), camera_source="ours").perceive(
        np.zeros((240, 320, 3), np.uint8), Scene(()))
    assert captured[0] == default_camera(320, 240)
    with pytest.raises(FormatError, match="unknown camera source"):
        Pipeline(perception, None, camera_source="front")


# ---------------------------------------------------------------------- the shipped checkpoints
HAVE_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("torchvision") is not None
needs_perception = pytest.mark.skipif(
    not HAVE_TORCH or not (ROOT / "models" / "perception" / "perception.pt").is_file(),
    reason="needs torch, torchvision and the shipped perception checkpoint (models/perception)")
needs_parser = pytest.mark.skipif(
    not HAVE_TORCH or not (ROOT / "models" / "parser_bilstm" / "weights.pt").is_file(),
    reason="needs torch and the shipped BiLSTM parser (models/parser_bilstm)")
FIXTURE_KEY = lambda scene: sorted((o.color, o.shape, o.size, o.material, o.region) for o in scene.objects)  # noqa: E731


@needs_perception
def test_shipped_perception_sees_the_fixture_and_answers_it():
    pipeline = Pipeline.from_pretrained(ROOT / "models", parser="given")
    question = Question.from_file(FIXTURE / "question.json")
    gold_scene = Scene.from_file(FIXTURE / "scene.json")
    perceived = pipeline.perceive(FIXTURE / "image.png", FIXTURE / "scene.json", FIXTURE / "environment.lp")
    assert FIXTURE_KEY(perceived) == FIXTURE_KEY(gold_scene)
    answer = pipeline.answer(FIXTURE / "image.png", question, FIXTURE / "environment.lp",
                             camera=FIXTURE / "scene.json")
    assert answer.values == frozenset({"yellow"}) == question.answer
    assert sorted(e.value for e in answer.explanation.eliminated) == ["blue", "brown", "cyan", "gray", "green",
                                                                      "purple", "red"]
    assert all(e.constraints for e in answer.explanation.eliminated)  # each ruled out by the environment
    # the same image as a PIL image and as an array, the camera as a Camera object
    Image = pytest.importorskip("PIL.Image")
    camera = as_camera(FIXTURE / "scene.json")
    with Image.open(FIXTURE / "image.png") as image:
        assert pipeline.answer(image, question, FIXTURE / "environment.lp", camera=camera,
                               explain=False).values == answer.values
        array = np.asarray(image.convert("RGB"))
    assert pipeline.answer(array, question, FIXTURE / "environment.lp", camera=camera.to_json(),
                           explain=False).scene_facts == answer.scene_facts


@needs_parser
def test_shipped_bilstm_parser_parses_the_fixture_question():
    from clevr_poc.parsing import programs_equal

    pipeline = Pipeline.from_pretrained(ROOT / "models", scene_source="given")
    question = Question.from_file(FIXTURE / "question.json")
    answer = pipeline.answer(question=question.text, environment=FIXTURE / "environment.lp",
                             scene=FIXTURE / "scene.json")
    assert programs_equal(answer.query, question.asp_query)
    assert answer.values == question.answer


@needs_perception
@needs_parser
def test_shipped_checkpoints_answer_the_fixture_from_pixels():
    pipeline = Pipeline.from_pretrained()
    assert pipeline.name == "NS-VQA (perception scene, BiLSTM ASP)"
    question = Question.from_file(FIXTURE / "question.json")
    answers = pipeline.answer_batch([(FIXTURE / "image.png", question.text, FIXTURE / "environment.lp", None,
                                      FIXTURE / "scene.json")], explain=True)
    assert answers[0].values == frozenset({"yellow"})
    assert len(answers[0].explanation.eliminated) == 7


# ---------------------------------------------------------------------- the demo command
@pytest.mark.skipif(importlib.util.find_spec("bpy") is not None, reason="bpy is installed")
def test_demo_without_bpy_fails_with_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "clevr_poc", "demo", "--out", str(tmp_path / "demo")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "bpy" in lines[0] and "pip install '.[demo]'" in lines[0] and "render" in lines[0]
    assert not (tmp_path / "demo").exists()


def test_demo_help_lists_the_options():
    result = subprocess.run([sys.executable, "-m", "clevr_poc", "demo", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0
    for option in ("--out", "--environments", "--questions", "--seed", "--samples"):
        assert option in result.stdout


def test_demo_tables_and_perception_summary():
    from clevr_poc.commands.demo_command import attribute_table
    from clevr_poc.evaluation import EvaluationReport, ExampleResult
    from clevr_poc.experiment import PerceptionSummary, perception_summary

    results = (ExampleResult("a", frozenset({"red"}), frozenset({"red"}), 1.0, 1.0, attribute="color"),
               ExampleResult("b", frozenset({"cube", "sphere"}), frozenset({"cube"}), 0.0, 0.5, attribute="shape"))
    table = attribute_table({"m": EvaluationReport(results, model="m")})
    assert "| all (2) | 0.5000 |" in table and "| color (1) | 1.0000 |" in table
    assert "| shape (1) | 0.5000 |" in table  # the Jaccard sub-table
    _, scene, _ = load_example("appendix_a")
    other = scene.without_object(0)
    assert perception_summary([scene, other, None], [scene, scene, scene]) == PerceptionSummary(
        scenes=3, right_count=1, exact_scenes=1, objects=12, objects_found=7)


@pytest.mark.slow
@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("bpy", "torch", "matplotlib"))
                    or not (ROOT / "models" / "perception" / "perception.pt").is_file(),
                    reason="needs bpy, torch, matplotlib and the shipped checkpoints")
def test_demo_end_to_end(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "clevr_poc", "demo", "--out", str(out), "--environments", "1",
                             "--questions", "2", "--samples", "2", "--no-progress"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "(a) Exact answer accuracy" in result.stdout and "Explanation:" in result.stdout
    data = json.loads((out / "report" / "demo.json").read_text())
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last == data["models"]["NS-VQA (perception, BiLSTM)"] and last["n"] == 2
    assert data["settings"]["questions"] == 2
    assert data["models"]["NS-VQA (gold scene, gold ASP)"]["exact_accuracy"] == 1.0
    assert (out / "report" / "demo.md").is_file() and (out / "report" / "table2.md").is_file()
    assert any((out / "report" / "plots").glob("*.png"))
