"""The one-line errors for bad input read as plain English: one test per kind of place an error names
(a line of a file, a predicate, a JSON field, a command-line option, an environment variable) and per
kind of ASP mistake (an unbalanced parenthesis in a query, a syntax error in an environment file), each
asserting the whole wording: the file, the place and the offending value."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clevr_poc.dataset_reader import load_dataset
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError, UnsafeProgramError, describe_place
from clevr_poc.evaluation import Checkpoint
from clevr_poc.examples import example_dir
from clevr_poc.queries.sanitizer import sanitize_query
from clevr_poc.scene import Scene

ENVIRONMENT = (example_dir("appendix_a") / "environment.lp").read_text(encoding="utf-8")


@pytest.mark.parametrize("field, words", [
    ("line 3", "line 3"), ("line 2, column 7", "line 2, column 7"), ("object/1", "predicate object/1"),
    ("--threads", "--threads"), ("--max-tokens/--workers", "--max-tokens/--workers"),
    ("split", "field 'split'"), ("objects[0].color", "field 'objects[0].color'"),
    ("min_distance/margin", "field 'min_distance/margin'"),
])
def test_a_field_is_named_by_its_kind(field, words):
    assert describe_place(field) == words
    error = FormatError("is wrong", source="f.json", field=field, value=0)
    assert str(error) == f"f.json, {words}: is wrong (got 0)" and error.field == field


def test_a_line_of_a_file_reads_file_comma_line(tmp_path):
    """A JSON-lines record: '<file>, line 2: invalid JSON at column 13' (not 'field line 2 ... line 1')."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"checkpoint": "clevr_poc.evaluate", "model": "m"}\n{"key": [1, }\n')
    with pytest.raises(FormatError) as info:
        Checkpoint(path, "m")
    assert str(info.value) == f"{path}, line 2: invalid JSON at column 13: Expecting value"


def test_a_predicate_reads_predicate_name_arity(tmp_path):
    path = tmp_path / "environment_1.lp"
    path.write_text("".join(line for line in ENVIRONMENT.splitlines(keepends=True) if not line.startswith("object(")))
    with pytest.raises(FormatError) as info:
        Environment.from_lp(path)
    assert str(info.value) == (f"{path}, predicate object/1: no 'object(0..N-1).' line saying how many objects a "
                               "scene has")


def test_a_json_field_is_quoted_after_a_comma():
    data = {"objects": [{"color": 3, "shape": "cube", "size": "large", "material": "metal", "region": 0}]}
    with pytest.raises(FormatError) as info:
        Scene.from_json(data, source="s.json")
    assert str(info.value).startswith("s.json, field 'objects[0].color': not a color") and "(got 3)" in str(info.value)


def test_an_unknown_split_names_the_folder_the_field_and_the_value(tmp_path):
    (tmp_path / "incomplete" / "questions" / "train").mkdir(parents=True)
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "0.lp").write_text(ENVIRONMENT)
    with pytest.raises(FormatError) as info:
        load_dataset(tmp_path, "nope")
    assert str(info.value) == (f"{tmp_path / 'incomplete' / 'questions'}, field 'split': unknown split; the dataset "
                               "has ['train'] (got 'nope')")


def test_an_environment_variable_is_named_as_one(monkeypatch):
    from clevr_poc import limits

    monkeypatch.setenv("CLEVR_POC_MAX_SCENE_FILE_BYTES", "lots")
    with pytest.raises(FormatError) as info:
        limits.cap("scene_file_bytes")
    assert str(info.value) == ("environment variable CLEVR_POC_MAX_SCENE_FILE_BYTES: must be an integer >= 1 "
                               "(got 'lots')")


@pytest.mark.parametrize("text, message", [
    ("foo(\n", "line 2: not a valid ASP program: syntax error at column 1: unexpected end of file, expecting ')' "
               "or ';'"),
    ("a :- b c.\n", "line 1: not a valid ASP program: syntax error at column 8: unexpected name 'c'"),
    ("a :- b(X) 3.\n", "line 1: not a valid ASP program: syntax error at column 11: unexpected number '3'"),
    ("a :- b(X,.\n", "line 1: not a valid ASP program: syntax error at column 10: unexpected '.'"),
])
def test_an_asp_syntax_error_says_where_and_what_in_words(text, message):
    """clingo's 'unexpected EOF' / '<IDENTIFIER>' become 'end of file' / 'name', with the column and the text."""
    with pytest.raises(FormatError) as info:
        Environment.from_asp(text, source="env.lp")
    assert str(info.value) == f"env.lp, {message}"


def test_an_unclosed_parenthesis_in_a_query_on_the_command_line_is_one_plain_line():
    query = "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red"
    result = subprocess.run([sys.executable, "-m", "clevr_poc", "answer", "--example", "appendix_a", "--query", query],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"error: rejected ASP query: unclosed '(' after 'hasProperty' at column 49: {query!r}\n"
    with pytest.raises(UnsafeProgramError, match=r"^rejected ASP query: '\)' at column 11 has no matching '\(': "):
        sanitize_query("missing(Q)) :- object(X).")


def test_a_predictions_file_names_the_image_key_as_its_field():
    """A predictions file is keyed by image file name: the key is the field (no 'predictions[...]' wrapper),
    and a missing key is said once, without a repeated '(got ...)'."""
    from clevr_poc.evaluation.precomputed import _prediction_from_json

    with pytest.raises(FormatError) as info:
        _prediction_from_json(5, "CLEVR_test_000001.png")
    assert str(info.value) == "field 'CLEVR_test_000001.png': must be a list of values or null (got 5)"
