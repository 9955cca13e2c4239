"""``evaluate`` with missing or unreadable images (issue #26 item 9): the same rule for every model that
reads images, default a one-line error naming the file before any model is loaded, with
``--allow-missing-images`` a per-question failure whose cause is printed and kept in the report."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from evaluate_cli_support import run_cli

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "tests" / "fixtures" / "official_release_small"


@pytest.fixture
def release(tmp_path) -> Path:
    """A copy of the small official-layout release (its ``output/`` folder), images included."""
    shutil.copytree(RELEASE, tmp_path / "release")
    return tmp_path / "release" / "output"


@pytest.mark.parametrize("model", [["--model", "ns-vqa", "--scene", "perception"],
                                   ["--model", "vlm", "--backend", "openai:m@http://127.0.0.1:9"],
                                   ["--model", "clip-nl", "--checkpoint", "nowhere"]])
def test_a_dataset_without_rendered_images_is_a_one_line_error_for_every_image_model(release, capsys, model):
    shutil.rmtree(release / "incomplete" / "images")
    status, out, err = run_cli(["evaluate", "--dataset", str(release), "--split", "testing", *model], capsys)
    assert status == 1 and out == [] and len(err) == 1, (out, err)
    expected = release / "incomplete" / "images" / "testing" / "CLEVR_000000.png"
    assert err[0].startswith(f"error: {expected}: the image is not rendered"), err[0]


def test_an_unreadable_image_is_a_one_line_error_naming_it(release, capsys):
    bad = release / "incomplete" / "images" / "testing" / "CLEVR_000001.png"
    bad.write_bytes(bad.read_bytes()[:100])  # truncated
    status, out, err = run_cli(["evaluate", "--dataset", str(release), "--split", "testing", "--model", "ns-vqa",
                                "--scene", "perception"], capsys)
    assert status == 1 and len(err) == 1 and err[0].startswith(f"error: {bad}: cannot read the image"), err


@pytest.mark.skipif(importlib.util.find_spec("torch") is None
                    or not (ROOT / "models/perception/perception.pt").is_file(),
                    reason="needs torch and the shipped perception model")
def test_allow_missing_images_makes_each_bad_image_a_reported_failure(release, tmp_path, capsys):
    images = release / "incomplete" / "images" / "testing"
    (images / "CLEVR_000000.png").unlink()
    (images / "CLEVR_000001.png").write_bytes(b"not a png")
    status, out, err = run_cli(["evaluate", "--dataset", str(release), "--split", "testing", "--model", "ns-vqa",
                                "--scene", "perception", "--query", "bilstm", "--device", "cpu", "--limit", "3",
                                "--allow-missing-images", "--out", str(tmp_path / "report"), "--no-plots"], capsys)
    assert status == 0, err
    failures = [line for line in out if line.startswith("image failure")]
    assert len(failures) == 2
    assert f"{images / 'CLEVR_000000.png'}: the image is not rendered" in failures[0]
    assert f"{images / 'CLEVR_000001.png'}: cannot read the image" in failures[1]
    # the unreadable images on their own line, out of the parse failures and the program accuracy: the
    # parser never saw those questions
    assert "unreadable images: 2 of 3 questions (never parsed or answered; scored as wrong)" in out
    assert "parse failures: 0 of the 1 questions the model saw (scored as wrong)" in out
    program = next(line for line in out if line.startswith("program accuracy:"))
    assert " of 1 (" in program and program.endswith(
        "(the 2 questions with unreadable images were not parsed)"), program
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["image_failures"] == 2 and report["parse_failures"] == 2 and report["model_parse_failures"] == 0
    assert report["extra"]["program_accuracy"]["n"] == 1 and report["extra"]["program_accuracy"]["image_failures"] == 2
    summary = (tmp_path / "report" / "breakdowns.md").read_text()
    assert ("- parse failures: 2 (66.67%; scored as wrong): 2 unreadable images (never parsed or answered), 0 of "
            "the 1 questions the model saw") in summary
    errors = [example.get("error") or "" for example in report["examples"]]
    assert errors[0] == failures[0].replace("image failure (scored as a failure): ", "image: ")
    assert errors[1].startswith(f"image: {images / 'CLEVR_000001.png'}: cannot read the image") and errors[2] == ""


def test_without_pillow_the_image_check_says_so_once_and_does_not_offer_allow_missing_images(release, monkeypatch):
    """A missing dependency is not a problem of each file: no "--allow-missing-images" hint, with or without it."""
    import sys

    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.evaluation.image_checks import check_images
    from clevr_poc.image_files import ImageFileError

    examples = list(load_dataset(release, "testing"))[:2]
    monkeypatch.setitem(sys.modules, "PIL", None)  # "import PIL" now raises ImportError
    for allow in (False, True):
        with pytest.raises(ImageFileError) as caught:
            check_images(examples, release, allow_missing=allow)
        assert str(caught.value) == "reading images needs Pillow: pip install '.[vision]' in the clevr_poc folder"
