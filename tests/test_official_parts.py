"""``official_query_of_parts`` (issue 27: the generator's literals rewritten without a check of their own)
against ``official_query(SanitizedQuery(head, body))``: the same query for parts in the language, the same
error for parts outside it or outside the six structures."""

from __future__ import annotations

import pytest

from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.queries.official_form import official_query, official_query_of_parts
from clevr_poc.queries.query import Atom, Constant, Inequality, Number, SanitizedQuery, Variable
from clevr_poc.queries.sanitizer import sanitize_query

Q, X, Y, Z = (Variable(v) for v in "QXYZ")


def _parts(text: str):
    query = sanitize_query(text)
    return query.head, query.body


@pytest.mark.parametrize("text", [
    "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cube).",
    "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,red), left(Y,X).",
    "missing(A) :- hasProperty(B,material,A), same_color(C,B), B!=C, hasProperty(C,shape,sphere).",
    "missing(Q) :- hasProperty(X,shape,Q), front(Y,X), behind(Z,Y), hasProperty(Z,size,large), X!=Y.",
    "missing(Q) :- hasProperty(X,color,Q), right(Y,X), left(Z,X), hasProperty(Y,size,small), "
    "hasProperty(Z,material,metal).",
])
def test_the_same_query_as_the_checked_path(text):
    head, body = _parts(text)
    fast = official_query_of_parts(head, body)
    assert fast == official_query(SanitizedQuery(head, body))
    assert fast.text == official_query(text).text
    assert fast.object_variables == official_query(text).object_variables


def test_an_official_structure_error_is_the_checked_paths_error():
    head, body = _parts("missing(Q) :- hasProperty(X,color,Q), left(Y,X), left(Z,Y), left(X,Z).")
    with pytest.raises(FormatError) as fast:
        official_query_of_parts(head, body)
    with pytest.raises(FormatError) as checked:
        official_query(SanitizedQuery(head, body))
    assert str(fast.value) == str(checked.value)
    assert "the links must form a tree through X" in str(fast.value)


@pytest.mark.parametrize("body", [
    (Atom("hasProperty", (X, Constant("color"), Q)), Atom("script", (X,))),         # not whitelisted
    (Atom("hasProperty", (X, Constant("color"))),),                                  # wrong arity
    (Atom("hasProperty", (X, Constant("colour"), Q)),),                              # unknown constant
    (Atom("hasProperty", (X, Constant("color"), Q)), Inequality(X, Number(100))),    # out of range
])
def test_parts_outside_the_language_raise_the_sanitizers_error(body):
    with pytest.raises(UnsafeProgramError) as fast:
        official_query_of_parts(Q, body)
    with pytest.raises(UnsafeProgramError) as checked:
        SanitizedQuery(Q, body)
    assert str(fast.value) == str(checked.value)
