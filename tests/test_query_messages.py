"""What the query checker says about the common mistakes: a bare word, an English sentence, a capitalised
value (a variable that matches everything), each with a message naming the actual problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc.errors import UnsafeProgramError
from clevr_poc.examples import EXAMPLES, load_example
from clevr_poc.queries.sanitizer import ENGLISH_HINT, looks_like_english, sanitize_query

BODY_HINT = ("a query body uses hasProperty/3, at/2, left/2, right/2, front/2, behind/2, same_color/2, same_size/2, "
             "same_shape/2, same_material/2, sameProperty/3, object/1 and X != Y comparisons")
FIXTURES = Path(__file__).parent / "fixtures"


def message(text: str) -> str:
    with pytest.raises(UnsafeProgramError) as info:
        sanitize_query(text)
    return str(info.value)


@pytest.mark.parametrize("text, reason", [
    ("missing(Q) :- foo.", f"'foo' is not an allowed atom; {BODY_HINT}"),
    ("missing(Q) :- hasProperty(X,color,Q), foo.", f"'foo' is not an allowed atom; {BODY_HINT}"),
    ("missing(Q) :- hasProperty(X,color,Q), red, object(X).", f"'red' is not an allowed atom; {BODY_HINT}"),
    ("missing(Q) :- object.", f"'object' needs its arguments (object/1); {BODY_HINT}"),
    ("missing(Q) :- hasProperty(X,color,Q), X.", f"'X' alone is not a literal; {BODY_HINT}"),
    ("missing(Q) :- hasProperty(X,color,Q), 3.", f"'3' alone is not a literal; {BODY_HINT}"),
])
def test_a_literal_that_is_no_atom_is_named(text, reason):
    assert message(text) == f"rejected ASP query: {reason}: {text!r}"


def test_comparisons_keep_their_messages():
    assert message("missing(Q) :- hasProperty(X,color,Q), red != X.") == (
        "rejected ASP query: 'red' in red != X is not an object (a variable or an object id): "
        "'missing(Q) :- hasProperty(X,color,Q), red != X.'")
    assert message("missing(Q) :- foo(X).") == "rejected ASP query: predicate foo/1 is not allowed: 'missing(Q) :- foo(X).'"


@pytest.mark.parametrize("text", ["What color is the cube?", "what is the color of the big cube",
                                  "Is there a red sphere left of the cube", "color?"])
def test_english_text_is_named(text):
    assert looks_like_english(text)
    assert message(text) == f"rejected ASP query: {ENGLISH_HINT}: {text!r}"


@pytest.mark.parametrize("text, reason", [
    ("missing(Q) :- hasProperty(X,color,Q)?", "'?' is not part of the query language"),  # a rule: not English
    ("#script (python) import os #end.", "directive '#script' is not allowed"),
])
def test_rules_with_a_bad_character_are_not_called_english(text, reason):
    assert not looks_like_english(text)
    assert message(text).startswith(f"rejected ASP query: {reason}")


@pytest.mark.parametrize("text, reason", [
    ("missing(Q) :- hasProperty(X,color,Red), hasProperty(X,shape,Q).", "'Red' is a variable (capitalised); the value is 'red'"),
    ("missing(Q) :- hasProperty(X,shape,Q), hasProperty(X,color,RED).", "'RED' is a variable (capitalised); the value is 'red'"),
    ("missing(Q) :- hasProperty(X,size,Cube), hasProperty(X,shape,Q).", "'Cube' is a variable (capitalised); the value is 'cube'"),
    ("missing(Q) :- hasProperty(X,Color,red), hasProperty(X,shape,Q).",
     "'Color' is a variable (capitalised); the attribute is 'color'"),
    ("missing(Q) :- sameProperty(X,Y,Shape), hasProperty(X,shape,Q).",
     "'Shape' is a variable (capitalised); the attribute is 'shape'"),
])
def test_a_capitalised_value_is_rejected(text, reason):
    assert message(text) == f"rejected ASP query: {reason}: {text!r}"


@pytest.mark.parametrize("text", [
    "missing(Red) :- hasProperty(X,color,Red).",  # the head variable
    "missing(Q) :- hasProperty(X,color,Red), hasProperty(Y,color,Red), hasProperty(X,shape,Q), X!=Y.",  # used twice
    "missing(Q) :- hasProperty(X,color,C), hasProperty(X,shape,Q).",  # 'c' is no value
    "missing(Q) :- hasProperty(X,A,Q).",
])
def test_other_variables_in_value_positions_are_kept(text):
    assert sanitize_query(text).text == text


def _official_queries() -> list[str]:
    queries = [load_example(name)[2].asp_query for name in EXAMPLES]
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        rows = data.get("questions", [data]) if isinstance(data, dict) else []
        queries += [row["asp_query"] for row in rows if isinstance(row, dict) and isinstance(row.get("asp_query"), str)]
    return queries


def test_official_queries_are_accepted_and_not_english():
    queries = _official_queries()
    assert len(queries) >= 10
    for text in queries:
        assert not looks_like_english(text)
        assert sanitize_query(text).text
