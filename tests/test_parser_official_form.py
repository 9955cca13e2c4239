"""The official query form (to_official_form) and program accuracy two ways: literal and semantic."""

from __future__ import annotations

import pytest

from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.parsing import program_accuracy, programs_equal, semantic_program_accuracy, to_official_form
from clevr_poc.parsing.equivalence import answers_agree
from clevr_poc.reasoning import Reasoner

from conftest import appendix_a_complete_scene, appendix_a_environment

# The two generated examples of the official form (SEMANTICS "The official query form"), in the sanitizer's
# spacing: to_official_form writes them back unchanged.
OFFICIAL_ONE_HOP = ("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,material,rubber), hasProperty(X,shape,cone), "
                    "left(Y,X), X!=Y.")
OFFICIAL_TWO_HOP = ("missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y2,size,medium), hasProperty(Y1,shape,cube), "
                    "hasProperty(X,color,brown), front(Y1,X), behind(Y2,Y1), X!=Y1, Y1!=Y2, X!=Y2.")

# "What color is the thing right of the purple sphere that is left of the gray cylinder?" on the Appendix-A
# partial scene: without X!=Y2 the queried object may be the gray cylinder itself.
TWO_HOP = ("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y2,color,gray), hasProperty(Y2,shape,cylinder), "
           "hasProperty(Y1,color,purple), hasProperty(Y1,shape,sphere), right(Y1,X), left(Y2,Y1), "
           "X!=Y1, Y1!=Y2, X!=Y2.")
TWO_HOP_WITHOUT_X_Y2 = TWO_HOP.replace(", X!=Y2.", ".")


@pytest.mark.parametrize("query", [OFFICIAL_ONE_HOP, OFFICIAL_TWO_HOP, TWO_HOP])
def test_official_examples_are_fixed_points(query):
    assert to_official_form(query) == query
    assert to_official_form(query.replace(" ", "").replace(":-", " :- ")) == query


@pytest.mark.parametrize("written, official", [
    # zero hop: nothing to add; descriptions in CLEVR order (size, color, material, shape)
    ("missing(A) :- hasProperty(B,shape,cube), hasProperty(B,size,A), hasProperty(B,color,red).",
     "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red), hasProperty(X,shape,cube)."),
    # one hop: X!=Y added
    ("missing(Q) :- hasProperty(Z,color,Q), left(W,Z), hasProperty(W,shape,cube).",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,cube), left(Y,X), X!=Y."),
    # same_relate: the inequality before the same_P literal (paper Appendix A), added when missing
    ("missing(Q) :- hasProperty(X,size,Q), same_shape(Y,X), hasProperty(Y,color,purple).",
     "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,purple), X!=Y, same_shape(Y,X)."),
    # two hop, decoder naming (X, Y, Z) and no inequalities: renamed by hop, all three added
    ("missing(Q) :- hasProperty(X,shape,Q), front(Y,X), hasProperty(Y,shape,cube), behind(Z,Y), "
     "hasProperty(Z,size,medium), hasProperty(X,color,brown).", OFFICIAL_TWO_HOP),
    # single and: both references next to X; the first linked one is Y1
    ("missing(Q) :- hasProperty(X,material,Q), right(Z,X), front(Y,X), hasProperty(Y,color,red), X!=Z.",
     "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y2,color,red), right(Y1,X), front(Y2,X), "
     "X!=Y1, Y1!=Y2, X!=Y2."),
    # three hop, variables named backwards: numbered by hop from X; six inequalities in the official order
    ("missing(Q) :- hasProperty(A,color,Q), left(B,A), front(C,B), left(D,C), hasProperty(D,color,cyan).",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y3,color,cyan), left(Y1,X), front(Y2,Y1), left(Y3,Y2), "
     "X!=Y1, Y1!=Y2, Y2!=Y3, X!=Y2, X!=Y3, Y1!=Y3."),
])
def test_to_official_form_renames_reorders_and_adds_inequalities(written, official):
    assert to_official_form(written) == official
    assert to_official_form(official) == official


@pytest.mark.parametrize("query, message", [
    ("missing(Q) :- hasProperty(X,color,Q), left(0,X).", "unexpected literal"),
    ("missing(Q) :- hasProperty(X,color,Q), at(X,2).", "unexpected literal"),
    ("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,cube).", "linked"),
    ("missing(Q) :- hasProperty(X,color,Q), left(Y,X), right(Z,Y), front(Z,X).", "tree"),
    ("missing(Q) :- hasProperty(X,color,Q), left(Y,X), left(Z,Y), left(W,Z), left(V,W).", "object variables"),
    ("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,Q), left(Y,X).", "answer"),
])
def test_to_official_form_rejects_other_structures(query, message):
    with pytest.raises(FormatError, match=message):
        to_official_form(query)


def test_to_official_form_reads_untrusted_text_through_the_sanitizer():
    with pytest.raises(UnsafeProgramError):
        to_official_form('missing(Q) :- hasProperty(X,color,Q). #script (python) import os #end.')


def test_generated_queries_are_fixed_points_for_a_fixed_seed(tiny_dataset):
    """The generator writes the official form: every query of a generated dataset is its own official form,
    and the first ones of the seed are these exact strings (same seed, same files)."""
    from clevr_poc.dataset_reader import load_dataset

    examples = load_dataset(tiny_dataset)
    queries = [e.question.asp_query for e in examples]
    assert queries and all(to_official_form(q) == q for q in queries)
    families = {e.question.template_filename for e in examples}
    assert {"one_hop.json", "two_hop.json", "same_relate.json"} <= families


# ---------------------------------------------------------------------- literal program accuracy
def test_literal_accuracy_is_invariant_to_renaming_and_order_but_not_to_a_dropped_inequality():
    renamed = ("missing(A) :- X!=B, front(B,C), hasProperty(C,shape,A), behind(X,B), C!=X, "
               "hasProperty(X,size,medium), hasProperty(B,shape,cube), hasProperty(C,color,brown), C!=B.")
    assert programs_equal(renamed, OFFICIAL_TWO_HOP)
    dropped = OFFICIAL_TWO_HOP.replace(", X!=Y2.", ".")
    assert not programs_equal(dropped, OFFICIAL_TWO_HOP)
    assert programs_equal(to_official_form(dropped), OFFICIAL_TWO_HOP)  # the repair restores it
    assert program_accuracy([renamed, dropped, None, "not a query"], [OFFICIAL_TWO_HOP] * 4) == 0.25


# ---------------------------------------------------------------------- semantic program accuracy
def test_semantic_accuracy_sees_the_dropped_inequality_change_the_answer():
    environment, partial = appendix_a_environment(), appendix_a_complete_scene().without_object(4)
    reasoner = Reasoner()
    # the official executor's answers (Reasoner): the gray cylinder's own color enters without X!=Y2
    assert reasoner.answer(environment, partial, TWO_HOP).values == {"blue", "green", "purple"}
    assert reasoner.answer(environment, partial, TWO_HOP_WITHOUT_X_Y2).values == {"blue", "gray", "green", "purple"}
    assert not answers_agree(TWO_HOP_WITHOUT_X_Y2, TWO_HOP, environment, partial, reasoner=reasoner)
    # X!=Y1 is implied by right(Y1,X): dropping it is literally wrong but semantically right
    without_x_y1 = TWO_HOP.replace(" X!=Y1,", "")
    assert not programs_equal(without_x_y1, TWO_HOP)
    predictions = [TWO_HOP, without_x_y1, TWO_HOP_WITHOUT_X_Y2, None]
    problems = [(environment, partial)] * 4
    assert semantic_program_accuracy(predictions, [TWO_HOP] * 4, problems, reasoner=reasoner) == 0.5
    assert program_accuracy(predictions, [TWO_HOP] * 4) == 0.25
    with pytest.raises(FormatError, match="same length"):
        semantic_program_accuracy(predictions, [TWO_HOP] * 3, problems)


def test_appendix_a_generator_question_keeps_its_answer_in_the_official_form():
    """The paper's Appendix-A question (same_relate) has no non-adjacent inequality: {small, medium}."""
    environment, partial = appendix_a_environment(), appendix_a_complete_scene().without_object(4)
    query = to_official_form("missing(Q) :- hasProperty(X,size,Q), hasProperty(X,material,rubber), "
                             "hasProperty(X,color,red), hasProperty(Y,color,purple), hasProperty(Y,size,large), "
                             "X!=Y, same_shape(Y,X).")
    assert query.endswith("hasProperty(X,color,red), hasProperty(X,material,rubber), X!=Y, same_shape(Y,X).")
    assert Reasoner().answer(environment, partial, query).values == {"small", "medium"}


# ---------------------------------------------------------------------- re-wording (benchmarks/parser_official_phrasings.py)
def test_reword_fills_every_variant_of_the_same_structure_with_the_questions_values(tiny_dataset):
    import random
    import re

    from clevr_poc import domain
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.generation.template_files import load_templates
    from clevr_poc.parsing.rewording import by_structure, reword, source_template, template_values

    templates = load_templates()
    targets = by_structure(templates)
    words = {w: v for v, ws in domain.SYNONYMS.items() if v in domain.ATTRIBUTE_OF_VALUE for w in ws}
    words.update({v: v for v in domain.ATTRIBUTE_OF_VALUE})
    for example in list(load_dataset(tiny_dataset))[:12]:
        question = example.question
        source = source_template(question, templates)
        values = template_values(question, source)
        assert set(values) == set(source.param_types)
        # the values are the query's constants (one per description literal and relation)
        constants = sorted(re.findall(r"hasProperty\(\w+,\w+,([a-z]+)\)", question.asp_query)
                           + re.findall(r"\b(left|right|front|behind)\(", question.asp_query))
        assert sorted(v for v in values.values() if v) == constants
        texts = reword(question, source, targets, random.Random(0))
        assert len(texts) == len(source.text)
        for text in texts:
            named = sorted(words[w] for w in re.findall(r"[a-z]+(?:-sized)?", text.lower().replace("how large is", ""))
                           if w in words)
            assert named == sorted(v for k, v in values.items() if v and source.param_types[k] != "Relation"), text
