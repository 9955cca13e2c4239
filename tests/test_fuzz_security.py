"""Property-based fuzzing (hypothesis) of the query sanitizer, the environment-file check and the
Reasoner: mutated valid inputs and hostile fragments either give a typed one-line error or pass, and
whatever reaches clingo is inside the language (checked independently, :mod:`clevr_poc.reasoning.audit`).
The long run with more than 10,000 inputs is ``benchmarks/fuzz.py``."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clevr_poc.environments import Environment
from clevr_poc.errors import ClevrPocError, FormatError, UnsafeProgramError
from clevr_poc.examples import load_example
from clevr_poc.knowledge import read_asp
from clevr_poc.reasoning import Reasoner, sanitize_query
from clevr_poc.reasoning.audit import (clingo_input_violation, environment_code_violation, query_violation,
                                      recording_clingo_inputs)

QUERIES = [
    "missing(Q):-hasProperty(X,color,Q),hasProperty(X,shape,cone).",
    "missing(Q):-hasProperty(X,color,Q),hasProperty(Y,material,rubber),hasProperty(X,shape,cone),left(Y,X),X!=Y.",
    "missing(Q):-hasProperty(X,shape,Q),hasProperty(Y2,size,medium),hasProperty(Y1,shape,cube),"
    "hasProperty(X,color,brown),front(Y1,X),behind(Y2,Y1),X!=Y1,Y1!=Y2,X!=Y2.",
    "missing(Q) :- hasProperty(X,size,Q), same_color(Y,X), X != Y, at(Y,2).",
    "missing(Q) :- hasProperty(X,material,Q), sameProperty(X,Y,shape), object(Y), hasProperty(3,color,red).",
]
HOSTILE = ["#include \"/nonexistent/f.lp\".", "#script (python) import os #end.", "%", "%*", "*%", "\n", "\r",
           '"', "\\", "é", "\x00", "@f(X)", "not ", "..", ";", "#!", "0x1", "01", "X'", "_", "(", ")", ",", ".",
           ":-", "!=", "hasProperty(X7,color,Q),", "#count{X:object(X)}", "#const n=1.", "%* %* *% \"\\\n*% "]


@st.composite
def mutated(draw, bases: list[str], fragments: list[str]) -> str:
    """A base text with 1-4 edits: insert a hostile fragment or random text, delete or repeat a slice."""
    text = draw(st.sampled_from(bases))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["fragment", "text", "delete", "repeat"]))
        if edit == "fragment":
            text = text[:at] + draw(st.sampled_from(fragments)) + text[at:]
        elif edit == "text":
            text = text[:at] + draw(st.text(max_size=6)) + text[at:]
        else:
            end = draw(st.integers(at, min(len(text), at + 40)))
            text = text[:at] + (text[at:end] * 2 if edit == "repeat" else "") + text[end:]
    return text


def assert_one_line(error: Exception) -> None:
    assert "\n" not in str(error) and str(error)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(QUERIES, HOSTILE))
def test_sanitizer_output_is_always_inside_the_query_language(text):
    try:
        checked = sanitize_query(text)
    except UnsafeProgramError as error:
        assert_one_line(error)
        return
    assert query_violation(checked.text) is None, (text, checked.text)
    assert sanitize_query(checked.text).text == checked.text  # a fixed point: the re-check keeps it


ENVIRONMENT = (read_asp("background.lp") + "\nobject(0..4).\n"
               ":- object(X), at(X, 0), not hasProperty(X, size, large).\n"
               " :- object(X), at(X, 0), not hasProperty(X, color, green).\n"
               ":- #count{X1, X2: sameProperty(X1, X2, size), object(X1), object(X2), at(X1, 2), at(X2, 1)}<1.\n"
               "#show hasProperty/3. #show at/2.\n")
ENVIRONMENT_FRAGMENTS = HOSTILE + ["object(0..4).", "object(0..100).", "p(é).", ":- foo(X).", "#show X : p(X).",
                                   "%* x *%", "hasProperty(0,size,small).", "#external a.", "larg", "100000"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated([ENVIRONMENT], ENVIRONMENT_FRAGMENTS))
def test_environment_check_lets_only_safe_code_reach_clingo(text):
    with recording_clingo_inputs() as seen:
        try:
            environment = Environment.from_asp(text, source="fuzz.lp")
        except FormatError as error:
            assert_one_line(error)
            assert str(error).startswith("fuzz.lp")
            environment = None
    for where, code in seen:
        assert environment_code_violation(code) is None, (where, code[:200])
    if environment is not None:
        assert 1 <= environment.num_objects <= 20


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(QUERIES, HOSTILE), st.sampled_from(Reasoner.MODES))
def test_reasoner_solves_only_checked_queries(text, mode):
    environment, scene, _ = load_example("appendix_a")
    reasoner = Reasoner(mode=mode, time_limit=2.0)
    with recording_clingo_inputs() as seen:
        try:
            reasoner.answer(environment, scene, text)
        except ClevrPocError as error:
            assert_one_line(error)
    for where, program in seen:
        assert clingo_input_violation(where, program) is None, (where, program[-300:])
        if where == "environment":
            assert program == environment.constraints_asp()
    if mode == "compiled":  # compiled mode grounds only the environment: the query is a set of assumptions
        assert "query" not in {where for where, _ in seen} or reasoner.counts["direct"] > 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(QUERIES, HOSTILE + ["a'b", "0b1", "X10b", ")(", "((", "-", "=", ":", "__", "_1", "1_", "0a", "00"]))
def test_sanitizer_fast_path_agrees_with_the_full_check(text):
    """The regular-expression fast path of the tokenizer accepts exactly what the token-by-token check
    accepts, with the same canonical text."""
    from unittest import mock

    from clevr_poc.queries import sanitizer

    def outcome():
        try:
            return sanitize_query(text).text
        except UnsafeProgramError:
            return None

    fast = outcome()
    with mock.patch.object(sanitizer, "_FAST_TOKEN", re.compile(r"(?!)")):  # never matches: no fast path
        assert outcome() == fast
