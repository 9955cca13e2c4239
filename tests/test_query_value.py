"""The typed query value (#23): typed terms, printing, clingo syntax trees, the answer reader, and no
query-text classification outside ``clevr_poc/queries``."""

from __future__ import annotations

import re
from pathlib import Path

import clingo
import pytest

from clevr_poc.examples import load_example
from clevr_poc.queries import Atom, Constant, Inequality, Number, SanitizedQuery, Variable, sanitize_query
from clevr_poc.queries.official_form import official_query, to_official_form
from clevr_poc.solver.control import missing_values
from clevr_poc.solver.rules import parse_rules

PACKAGE = Path(__file__).resolve().parents[1] / "clevr_poc"

QUERIES = [
    "missing(Q):-hasProperty(X,color,Q),at(X,2),X!=3.",
    "query(A) :- hasProperty(B,size,A), hasProperty(C,shape,cube), left(C,B), B!=C.",
    "missing(Q) :- hasProperty(X,P,Q), sameProperty(X,4,P), object(X).",
    "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y,color,red), X!=Y, same_shape(Y,X).",
]


def test_sanitize_query_gives_typed_terms_in_written_order():
    checked = sanitize_query(QUERIES[0])
    x, q = Variable("X"), Variable("Q")
    assert checked.head == q and type(checked.head) is Variable
    assert checked.body == (Atom("hasProperty", (x, Constant("color"), q)), Atom("at", (x, Number(2))),
                            Inequality(x, Number(3)))
    assert [type(t) for t in checked.body[1].terms] == [Variable, Number]
    assert checked.atoms == checked.body[:2] and checked.inequalities == checked.body[2:]
    assert checked.text == "missing(Q) :- hasProperty(X,color,Q), at(X,2), X!=3."
    assert checked.literals == ("hasProperty(X,color,Q)", "at(X,2)", "X!=3")
    assert checked.attribute == "color" and checked.object_variables == {"X"}


@pytest.mark.parametrize("text", QUERIES)
def test_a_value_made_from_its_parts_is_the_same_query(text):
    checked = sanitize_query(text)
    rebuilt = SanitizedQuery(checked.head, checked.body)
    assert rebuilt == checked and hash(rebuilt) == hash(checked)
    assert rebuilt.text == checked.text and rebuilt.attribute == checked.attribute
    assert sanitize_query(checked.text) == checked  # the text reads back to the same value


@pytest.mark.parametrize("text", QUERIES)
def test_rule_is_the_query_as_clingo_reads_its_text(text):
    checked = sanitize_query(text)
    assert [str(r) for r in parse_rules(str(checked.rule()))] == [str(r) for r in parse_rules(checked.text)]
    witness = str(checked.rule("witness", (checked.body[0].terms[0], checked.head)))
    assert witness.startswith(f"witness({checked.body[0].terms[0]},{checked.head}) :- ")
    assert len(parse_rules(witness)[0].body) == len(checked.body)


def test_official_query_is_typed_and_prints_the_official_form():
    _, _, question = load_example("appendix_a")
    official = official_query(question.asp_query)
    assert isinstance(official, SanitizedQuery) and official.head == "Q"
    assert official.text == to_official_form(question.asp_query) == (
        "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,size,large), hasProperty(Y,color,purple), "
        "hasProperty(X,color,red), hasProperty(X,material,rubber), X!=Y, same_shape(Y,X).")
    assert official_query(official) == official  # idempotent on values too


def test_missing_values_reads_only_missing_of_arity_one():
    symbols = [clingo.Function("missing", [clingo.Function("red")]), clingo.Function("missing", [clingo.Number(3)]),
               clingo.Function("other", [clingo.Function("blue")]),
               clingo.Function("missing", [clingo.Function("a"), clingo.Function("b")])]
    assert missing_values(symbols) == frozenset({"red", "3"})
    names = {symbols[0]: "red"}
    assert missing_values(symbols, names) == frozenset({"red", "3"})
    assert missing_values([]) == frozenset()


def test_no_query_text_is_classified_outside_the_query_package():
    """No module outside ``queries/`` keeps a variable regex, a copy of the object-position table or a
    case test on query terms (the query value answers these)."""
    patterns = [re.compile(p) for p in (
        r"_VARIABLE\s*=\s*re\.compile", r"_OBJECT_POSITIONS\s*=", r"\[:1\]\.isupper\(\)", r"\\b\[A-Z\]\\b",
        r"_QUERY_ATTRIBUTE\s*=", r"witness\(\{")]
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "queries" or path.name == "asp_lexer.py":
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(PACKAGE)}: {p.pattern}" for p in patterns if p.search(text)]
    assert offenders == []


def test_a_query_pickles_without_its_process_bound_hash():
    import pickle

    checked = sanitize_query(QUERIES[1])
    hash(checked)  # cached on the value
    copy = pickle.loads(pickle.dumps(checked))
    assert "_hash" not in copy.__dict__ and copy == checked and copy.text == checked.text
    assert copy.attribute == "size" and hash(copy) == hash(checked)


def test_object_terms_are_the_terms_in_object_positions():
    from clevr_poc.queries.query import Atom, Constant, Inequality, Number, Variable

    x, y, q = Variable("X"), Variable("Y"), Variable("Q")
    assert Atom("hasProperty", (x, Constant("color"), q)).object_terms == (x,)
    assert Atom("left", (y, x)).object_terms == (y, x)
    assert Atom("sameProperty", (x, y, Constant("size"))).object_terms == (x, y)
    assert Atom("at", (Number(3), Number(1))).object_terms == (Number(3),)
    assert Atom("left", (y,)).object_terms == (y,) and Atom("object", ()).object_terms == ()
    assert Atom("unknown", (x, y)).object_terms == ()
    assert Inequality(x, Number(2)).object_terms == (x, Number(2))
