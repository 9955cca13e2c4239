"""The explorer's logic without a browser (issue #25 item 1): the catalog (filters, wrong answers first),
answering an example or an upload, and bad inputs as the command line's one-line errors on the page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clevr_poc.commands.main import main
from clevr_poc.explorer.case_runner import CaseView, Models, error_line, run_example, run_upload
from clevr_poc.explorer.catalog import Catalog, choice_titles, family_value
from clevr_poc.errors import FormatError
from clevr_poc.reasoning import Reasoner

OFFICIAL = Path(__file__).resolve().parent / "fixtures" / "official_release_small"
IMAGE = OFFICIAL / "output" / "incomplete" / "images" / "testing" / "CLEVR_000000.png"
ENVIRONMENT = OFFICIAL / "environment_constraints" / "0.lp"


@pytest.fixture(scope="module")
def models():
    return Models()


@pytest.fixture
def predictions(tmp_path):
    catalog = Catalog(OFFICIAL)
    questions = catalog.dataset.questions()
    data = {q.image_filename: sorted(q.answer) for q in questions}
    data[questions[2].image_filename] = ["red"]      # wrong
    data[questions[4].image_filename] = None         # a parse failure
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(data))
    return path


def test_catalog_puts_wrong_answers_first_and_filters(predictions):
    catalog = Catalog(OFFICIAL, predictions)
    order = [(c.index, c.outcome) for c in catalog.filter()]
    assert order[:2] == [(2, "wrong"), (4, "parse failure")] and {o for _, o in order[2:]} == {"correct"}
    assert [c.index for c in catalog.filter(outcome="wrong")] == [2] and catalog.filter()[0].predicted == ("red",)
    family = catalog.choices[0].family
    assert all(c.family == family for c in catalog.filter(family=family_value(str(family))))
    assert catalog.splits == ["testing"] and choice_titles(catalog.filter())[0][0].startswith("✗ testing #2: ")
    with pytest.raises(FormatError, match="not a question family index"):
        family_value("x")


def test_catalog_refuses_bad_files_with_typed_errors(tmp_path):
    with pytest.raises(FormatError, match="dataset folder not found"):
        Catalog(tmp_path / "nosuch")
    bad = tmp_path / "p.json"
    bad.write_text('{"CLEVR_000000.png": "red"}')
    with pytest.raises(FormatError, match="a prediction must be a set of values"):
        Catalog(OFFICIAL, bad)


def test_an_example_with_the_gold_scene_and_query_gets_the_reasoners_answer(models):
    catalog = Catalog(OFFICIAL)
    view = run_example(catalog, 1, models=models, scene_source="gold", query_source="gold")
    example = catalog.example(1)
    expected = Reasoner().answer(example.environment, example.partial_scene, example.question.asp_query).values
    assert view.error is None and view.answer == tuple(sorted(expected))
    assert view.exact is True and view.jaccard == 1.0 and view.score_text.endswith("correct")
    assert view.constraints_english == tuple(c.describe() for c in example.environment.constraints)
    assert len(view.constraints_asp) == len(example.environment.constraints) > 0
    assert view.gold_image is not None and view.gold_image.shape == (320, 320, 3)
    assert "values" in view.explanation and view.perceived == view.gold_objects


def test_an_example_from_pixels_draws_the_perceived_objects(models):
    pytest.importorskip("torch")
    catalog = Catalog(OFFICIAL)
    view = run_example(catalog, 0, models=models)  # perception + BiLSTM parser
    assert view.error is None, view.error
    assert len(view.perceived) >= 3 and view.query.startswith("missing(Q) :- hasProperty(X,shape,Q)")
    from PIL import Image
    import numpy as np

    raw = np.asarray(Image.open(IMAGE).convert("RGB"))
    assert view.image.shape == raw.shape and (view.image != raw).any()  # boxes drawn
    assert view.answer is not None and view.jaccard is not None


def test_bad_queries_and_files_give_the_command_lines_one_line_error(models, tmp_path, capsys):
    catalog = Catalog(OFFICIAL)
    bad_query = 'missing(Q) :- #include "/etc/passwd".'
    view = run_example(catalog, 0, models=models, scene_source="gold", query_source="asp", typed_query=bad_query)
    assert main(["answer", "--example", "appendix_a", "--query", bad_query]) == 1
    assert view.error == capsys.readouterr().err.strip() and view.answer is None
    assert view.constraints_english  # what came before the error is still shown

    broken = tmp_path / "broken.lp"
    broken.write_text("#script (python)\nimport os\n#end.\n")
    view = run_upload(IMAGE, broken, "What size is it?", models=models)
    scene = tmp_path / "scene.json"
    shutil.copy(OFFICIAL / "output" / "incomplete" / "scenes" / "testing" / "CLEVR_000000.json", scene)
    assert main(["answer", "--environment", str(broken), "--scene", str(scene), "--query",
                 "missing(Q) :- hasProperty(X,size,Q)."]) == 1
    assert view.error == capsys.readouterr().err.strip() and view.error.startswith(f"error: {broken}")
    not_an_image = run_upload(ENVIRONMENT, ENVIRONMENT, "What size is it?", models=models)
    assert not_an_image.error.startswith(f"error: {ENVIRONMENT}") and "image" in not_an_image.error
    assert run_upload(None, ENVIRONMENT, "q", models=models).error == "error: field 'image': upload the image of the " \
                                                                      "partial scene"


def test_an_example_without_a_rendered_image_says_so(models, tmp_path):
    from clevr_poc.generation.dataset_writer import generate_dataset

    generate_dataset(tmp_path / "d", environments=1, scenes_per_environment=2, seed=5, splits={"test": 1.0},
                     progress=False)
    view = run_example(Catalog(tmp_path / "d"), 0, models=models)
    assert view.error.startswith("error: field 'image': no rendered image for this example")
    assert view.answer is None and view.question


def test_error_line_never_raises():
    assert error_line(ValueError("boom\nagain")) == "error: internal error (ValueError: boom again)"
    assert CaseView().answer_text == "" and CaseView(answer=("a",), gold=None).score_text.startswith("no gold")


def test_explore_checks_its_settings_before_serving(tmp_path, capsys):
    assert main(["explore", "--dataset", str(tmp_path / "nosuch")]) == 1
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'nosuch'}: dataset folder not found"
    assert main(["explore", "--port", "70000"]) == 1
    assert "--port" in capsys.readouterr().err
    assert main(["explore", "--dataset", str(OFFICIAL), "--predictions", str(tmp_path / "no.json")]) == 1
    assert "no.json" in capsys.readouterr().err
    if __import__("importlib").util.find_spec("torch") is not None:
        assert main(["explore", "--device", "tpu"]) == 1
        assert capsys.readouterr().err.strip().startswith("error: --device: not a torch device: 'tpu'")
