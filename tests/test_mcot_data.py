"""Loaders of ScienceQA and M3CoT files (hand-written fixtures in tests/fixtures/mcot)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.mcot.mcot_data import load_m3cot, load_scienceqa

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


def test_scienceqa_folder_loads_problems_splits_and_captions():
    dataset = load_scienceqa(FIXTURES / "scienceqa")
    assert len(dataset) == 9
    assert dataset.split_ids("train") == ("101", "102", "103")
    assert dataset.split_ids("test") == ("201", "202", "203", "204", "205")
    problem = dataset["204"]
    assert problem.choices == ("north", "south", "east", "west")
    assert problem.answer_letter == "D"
    assert problem.caption == "A river with arrows."
    assert (problem.has_text, problem.has_image, problem.no_context, problem.grade_band) == (True, True, False, "G7-12")
    assert dataset["203"].no_context and dataset["203"].grade_band == "G1-6"
    assert dataset["201"].caption == ""


def test_scienceqa_without_split_file_uses_record_splits(tmp_path):
    problems = json.loads((FIXTURES / "scienceqa" / "problems.json").read_text())
    (tmp_path / "problems.json").write_text(json.dumps(problems))
    dataset = load_scienceqa(tmp_path / "problems.json")
    assert sorted(dataset.split_ids("test")) == ["201", "202", "203", "204", "205"]
    assert dataset.split_ids("val") == ("301",)
    with pytest.raises(FormatError, match="unknown split"):
        dataset.split_ids("minival")


@pytest.mark.parametrize("field, value, message", [
    ("answer", 7, "answer index out of range"),
    ("answer", "B", "expected int"),
    ("choices", ["only one"], "expected 2..5 choices"),
    ("grade", "7th", "grade must look like"),
    ("question", None, "expected str"),
])
def test_scienceqa_malformed_record_names_file_id_and_field(tmp_path, field, value, message):
    problems = json.loads((FIXTURES / "scienceqa" / "problems.json").read_text())
    problems["202"][field] = value
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(problems))
    with pytest.raises(FormatError, match=message) as info:
        load_scienceqa(path)
    text = str(info.value)
    assert str(path) in text and f"{path}, record 202, field '{field}': " in text


def test_scienceqa_split_with_unknown_id_is_an_error(tmp_path):
    (tmp_path / "pid_splits.json").write_text(json.dumps({"test": ["201", "999"]}))
    with pytest.raises(FormatError, match="not in") as info:
        load_scienceqa(FIXTURES / "scienceqa" / "problems.json", pid_splits=tmp_path / "pid_splits.json")
    assert "999" in str(info.value)


def test_scienceqa_missing_file_is_typed():
    with pytest.raises(FormatError, match="file not found"):
        load_scienceqa(FIXTURES / "nope" / "problems.json")


def test_m3cot_jsonl_records_and_split_filter():
    records = load_m3cot(FIXTURES / "m3cot_data.jsonl", split="test")
    assert [r.id for r in records] == ["sci-1", "sci-2", "cs-1", "cs-2", "math-1", "math-2"]
    assert records[1].context == "The sky was blue all day."
    assert records[4].answer == "C" and records[4].answer_index == 2
    assert len(load_m3cot(FIXTURES / "m3cot_data.jsonl")) == 7


def test_m3cot_experiment_records_keep_messages():
    records = load_m3cot(FIXTURES / "m3cot_predictions.jsonl", require_messages=True)
    assert records[0].messages[-1] == "The largest object is:\n(B) the house."
    assert records[0].question == ""


def test_m3cot_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in (FIXTURES / "m3cot_data.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test.parquet")
    records = load_m3cot(tmp_path / "test.parquet", split="test")
    assert [r.id for r in records][:2] == ["sci-1", "sci-2"] and records[0].choices[1] == "the house"


@pytest.mark.parametrize("change, message", [
    ({"answer": "E"}, "answer must be one of"),
    ({"choices": "abc"}, "expected list"),
    ({"domain": 3}, "expected str"),
])
def test_m3cot_malformed_record_names_line_id_and_field(tmp_path, change, message):
    rows = [json.loads(line) for line in (FIXTURES / "m3cot_data.jsonl").read_text().splitlines()]
    rows[2].update(change)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(FormatError, match=message) as info:
        load_m3cot(path)
    assert f", line 3, record cs-1, field '{next(iter(change))}': " in str(info.value)


def test_m3cot_bad_json_line_and_duplicates(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x"\n')
    with pytest.raises(FormatError, match="line 1.*invalid JSON"):
        load_m3cot(path)
    line = (FIXTURES / "m3cot_data.jsonl").read_text().splitlines()[0]
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(FormatError, match="duplicate record id"):
        load_m3cot(path)
    with pytest.raises(FormatError, match="expected a .jsonl or .parquet"):
        load_m3cot(tmp_path / "records.csv")


def test_m3cot_prediction_without_messages_is_an_error(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text((FIXTURES / "m3cot_data.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(FormatError, match="line 1, record sci-1, field 'messages': missing field"):
        load_m3cot(path, require_messages=True)
