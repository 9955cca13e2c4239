"""Hostile M3CoT / ScienceQA records (issue #26 items 2 and 6): an image a record names resolves inside the
data folder or is refused with a typed error naming the record; an id is never joined as a path; invalid
UTF-8 in a JSON-lines file is a typed error naming the line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.mcot.mcot_data import load_m3cot, load_scienceqa

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"
RECORD = {"id": "r1", "category": "c", "image_id": "", "question": "Which?", "choices": ["a", "b"], "context": "",
          "answer": "B", "rationale": "", "split": "test", "domain": "science", "topic": "natural-science"}


@pytest.fixture
def layout(tmp_path):
    """``tmp_path/secret.png`` (outside) and ``tmp_path/data/`` with ``images/inside.png``."""
    png = (FIXTURES / "images" / "sci-1.png").read_bytes()
    (tmp_path / "secret.png").write_bytes(png)
    (tmp_path / "data" / "images").mkdir(parents=True)
    (tmp_path / "data" / "images" / "inside.png").write_bytes(png)
    return tmp_path


def _m3cot(folder: Path, **fields) -> Path:
    path = folder / "data" / "m3cot.jsonl"
    path.write_text(json.dumps({**RECORD, **fields}) + "\n")
    return path


@pytest.mark.parametrize("image", ["../secret.png", "images/../../secret.png", "ABSOLUTE"])
def test_an_m3cot_image_outside_the_data_folder_is_refused_naming_the_record(layout, image):
    image = str(layout / "secret.png") if image == "ABSOLUTE" else image
    with pytest.raises(FormatError, match=r"m3cot\.jsonl, record 'r1', field 'image': .*refused") as info:
        load_m3cot(_m3cot(layout, image=image))
    assert "\n" not in str(info.value)


def test_an_m3cot_symlink_out_of_the_data_folder_is_refused(layout):
    (layout / "data" / "images" / "link.png").symlink_to(layout / "secret.png")
    with pytest.raises(FormatError, match="record 'r1', field 'image': the image path leads outside"):
        load_m3cot(_m3cot(layout, image="images/link.png"))


def test_an_m3cot_id_is_never_joined_as_a_path(layout):
    records = load_m3cot(_m3cot(layout, id="../secret", image_id="../secret"))
    assert records[0].image_path is None  # old code: tmp_path/secret.png, read and sent to the backend
    inside = load_m3cot(_m3cot(layout, image="images/inside.png"))
    assert inside[0].image_path == layout / "data" / "images" / "inside.png"
    by_id = load_m3cot(_m3cot(layout, id="inside"))
    assert by_id[0].image_path == layout / "data" / "images" / "inside.png"


def test_scienceqa_ids_and_images_stay_inside_the_image_folder(tmp_path):
    data = tmp_path / "scienceqa"
    shutil.copytree(FIXTURES / "scienceqa", data)
    (tmp_path / "secret.png").write_bytes((data / "images" / "103" / "image.png").read_bytes())
    problems = json.loads((data / "problems.json").read_text())
    problems["../.."] = {**problems["103"], "image": "secret.png", "split": "test"}
    (data / "pid_splits.json").unlink()
    (data / "problems.json").write_text(json.dumps(problems))
    dataset = load_scienceqa(data)
    assert dataset["../.."].image_path is None  # old code: images/../../secret.png, outside the folder
    assert dataset["103"].image_path == data / "images" / "103" / "image.png"
    problems["103"]["image"] = str(tmp_path / "secret.png")
    (data / "problems.json").write_text(json.dumps(problems))
    with pytest.raises(FormatError, match=r"problems\.json, problem 103, field 'image': the image must be a path rel"):
        load_scienceqa(data)


def test_invalid_utf8_in_a_jsonl_line_is_a_typed_error(tmp_path):
    path = tmp_path / "m3cot.jsonl"
    path.write_bytes(json.dumps(RECORD).encode() + b'\n{"id": "\xff\xfe"}\n')
    with pytest.raises(FormatError, match=r"m3cot\.jsonl: not UTF-8 text: byte 0xff at line 2 column 9"):
        load_m3cot(path)
