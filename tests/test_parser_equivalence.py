"""Program accuracy: equality of ASP queries up to variable renaming and literal order (torch-free)."""

from __future__ import annotations

import itertools
import random

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.parsing import program_accuracy, programs_equal
from clevr_poc.parsing.equivalence import query_literals

# paper §3.4: "What is the color of the other cylinder that is the same material as the medium red thing?"
PAPER = ("missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cylinder), hasProperty(Y,size,medium), "
         "hasProperty(Y,color,red), same_material(Y,X), X!=Y.")
THREE_HOP = ("missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y,color,red), hasProperty(Z,shape,cube), "
             "hasProperty(W,size,large), left(Y,X), front(Z,Y), behind(W,Z).")


def _literals(query: str) -> list[str]:
    body = query.split(":-", 1)[1].strip().rstrip(".")
    return [lit.strip() for lit in body.replace("), ", ");").split(";")]


def test_renaming_and_order_do_not_matter():
    renamed = ("query(A) :- same_material(B,C), C!=B, hasProperty(B,color,red), hasProperty(C,color,A), "
               "hasProperty(B,size,medium), hasProperty(C,shape,cylinder)")
    assert programs_equal(PAPER, renamed)
    assert programs_equal(renamed, PAPER)


def test_every_literal_order_and_variable_permutation_is_equal():
    rng = random.Random(0)
    literals = _literals(THREE_HOP)
    for names in itertools.permutations(["X", "Y", "Z", "W"]):
        mapping = dict(zip(["X", "Y", "Z", "W"], names))
        shuffled = literals[:]
        rng.shuffle(shuffled)
        text = "missing(Q) :- " + ", ".join(shuffled) + "."
        text = "".join(mapping.get(ch, ch) for ch in text)
        assert programs_equal(THREE_HOP, text), text


def test_inequality_is_symmetric():
    assert programs_equal(PAPER, PAPER.replace("X!=Y", "Y!=X"))


def test_duplicates_collapse():
    assert programs_equal(PAPER, PAPER.replace("X!=Y.", "X!=Y, hasProperty(X,shape,cylinder)."))


@pytest.mark.parametrize("other", [
    PAPER.replace("same_material(Y,X)", "same_material(X,Y)"),      # direction of a relation
    PAPER.replace("medium", "small"),                                 # another value
    PAPER.replace("same_material", "same_color"),                     # another predicate
    PAPER.replace(", X!=Y", ""),                                      # a literal missing
    PAPER.replace("hasProperty(X,color,Q)", "hasProperty(X,size,Q)"), # another queried attribute
    PAPER.replace("hasProperty(Y,color,red)", "hasProperty(X,color,red)"),  # a description moved
    "missing(Q) :- hasProperty(X,color,Q).",
])
def test_different_programs(other):
    assert not programs_equal(PAPER, other)
    assert not programs_equal(other, PAPER)


def test_relation_is_not_its_converse_and_head_maps_to_head():
    a = "missing(Q) :- hasProperty(X,color,Q), left(Y,X), hasProperty(Y,shape,cube)."
    b = "missing(Q) :- hasProperty(X,color,Q), right(X,Y), hasProperty(Y,shape,cube)."
    assert not programs_equal(a, b)  # syntactic: left(Y,X) and right(X,Y) are different literals
    # swapping the head variable with an object variable is a renaming only if the head maps to the head
    c = "missing(Q) :- hasProperty(X,color,Q), hasProperty(Q,color,X)."
    assert programs_equal(c, "missing(X) :- hasProperty(X,color,Q), hasProperty(Q,color,X).")
    assert not programs_equal("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,red), left(Y,X).",
                              "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,color,red), left(Y,X).")


def test_symmetric_structures_need_the_search():
    # two references with the same colour class before refinement: Y and Z differ only by their shapes
    a = "missing(Q) :- hasProperty(X,color,Q), left(Y,X), left(Z,X), hasProperty(Y,shape,cube), hasProperty(Z,shape,sphere)."
    b = "missing(Q) :- hasProperty(X,color,Q), left(Z,X), left(Y,X), hasProperty(Z,shape,cube), hasProperty(Y,shape,sphere)."
    c = "missing(Q) :- hasProperty(X,color,Q), left(Z,X), left(Y,X), hasProperty(Z,shape,cube), hasProperty(Z,shape,sphere)."
    assert programs_equal(a, b)
    assert not programs_equal(a, c)


def test_invalid_text_equals_nothing():
    assert not programs_equal(PAPER, "#script (python) import os #end.")
    assert not programs_equal("not a query", "not a query")
    assert not programs_equal(PAPER, None)  # type: ignore[arg-type]


def test_query_literals_sorts_comparisons():
    head, literals = query_literals("missing(Q) :- hasProperty(Y,color,Q), Y!=X, left(X,Y).")
    assert head == "Q"
    assert ("!=", ("X", "Y")) in literals and len(literals) == 3


def test_program_accuracy():
    preds = [PAPER.replace("X", "A"), None, "garbage", PAPER.replace("medium", "large")]
    golds = [PAPER, PAPER, PAPER, PAPER]
    assert program_accuracy(preds, golds) == 0.25
    assert program_accuracy([], []) == 0.0
    with pytest.raises(FormatError, match="same length"):
        program_accuracy([PAPER], [])
    with pytest.raises(FormatError, match=r"golds\[1\]"):
        program_accuracy([PAPER, PAPER], [PAPER, "missing(Q) :- #include."])
