"""Issue 27: the Reasoner answers a question on the smallest grounded program of its environment with
room for its query variables (:meth:`clevr_poc.reasoning.Reasoner.covering_solver`): one grounding per
environment where a dataset asks few questions of each size, the answers of a program of the question's
own size."""

from __future__ import annotations

from pathlib import Path

import pytest

import clevr_poc.reasoning.reasoner as reasoner_module
from clevr_poc.dataset_reader import load_dataset
from clevr_poc.reasoning import Reasoner
from clevr_poc.reasoning.compiled import EnvironmentSolver

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset"
ONE_VARIABLE = "missing(Q) :- hasProperty(X,color,Q)."                                           # 2 slots
TWO_HOPS = ("missing(Q) :- hasProperty(X,shape,Q), left(Y1,X), hasProperty(Y1,size,large), "
            "front(Y2,Y1), X!=Y1, X!=Y2, Y1!=Y2.")                                                 # 3 slots
FOUR_OBJECTS = ("missing(Q) :- hasProperty(X,material,Q), right(Y1,X), behind(Y2,Y1), left(Y3,Y2), "
                "behind(Y4,Y3), X!=Y1, X!=Y2, X!=Y3, X!=Y4, Y1!=Y2, Y1!=Y3, Y1!=Y4, Y2!=Y3, Y2!=Y4, Y3!=Y4.")


def _sizes(reasoner: Reasoner, environment) -> list[int]:
    key = (environment.num_objects, environment.constraints_asp())
    return sorted(reasoner._solvers[key])


def test_one_grounding_per_environment_then_own_programs_for_frequent_sizes():
    example = next(iter(load_dataset(FIXTURE, "test")))
    environment, scene = example.environment, example.partial_scene
    reasoner = Reasoner(own_program_after=3)
    assert reasoner._compile(reasoner.sanitize(TWO_HOPS)).slots == 3
    assert reasoner._compile(reasoner.sanitize(FOUR_OBJECTS)).slots == 5
    first = reasoner.answer(environment, scene, ONE_VARIABLE)
    assert _sizes(reasoner, environment) == [4]          # the first program has FIRST_SLOTS = 4 variables
    reasoner.answer(environment, scene, TWO_HOPS)
    assert _sizes(reasoner, environment) == [4]          # a 3-variable question borrows it
    for _ in range(3):
        assert reasoner.answer(environment, scene, ONE_VARIABLE).values == first.values
    assert _sizes(reasoner, environment) == [4]          # 3 more two-variable questions: all borrowed
    assert reasoner.answer(environment, scene, ONE_VARIABLE).values == first.values
    assert _sizes(reasoner, environment) == [2, 4]       # the next grounds a program of its own size
    reasoner.answer(environment, scene, FOUR_OBJECTS)
    assert _sizes(reasoner, environment) == [2, 4, 5]    # none large enough: grounded at its size
    assert reasoner.counts == {"compiled": 7, "direct": 0}


def test_borrowed_programs_give_the_answers_of_exact_ones():
    reasoner, direct = Reasoner(), Reasoner(mode="direct")
    for example in load_dataset(FIXTURE, "test"):
        environment, scene = example.environment, example.partial_scene
        for query in (ONE_VARIABLE, TWO_HOPS, FOUR_OBJECTS, example.question.asp_query):
            compiled = reasoner._compile(reasoner.sanitize(query))
            exact = EnvironmentSolver(environment.num_objects, environment.constraints_asp(),
                                      slots=max(2, compiled.slots))
            expected = exact.solve(exact.assumptions(scene, compiled), 10.0)[:2]
            answer = reasoner.answer(environment, scene, query)
            assert (answer.satisfiable, answer.values) == expected
            assert answer.values == direct.answer(environment, scene, query).values
        assert reasoner.answer(environment, scene, example.question.asp_query).values == example.question.answer


def test_own_program_after_defaults_and_bad_values():
    from clevr_poc.generation.question_generator import QuestionGenerator

    assert Reasoner().own_program_after == reasoner_module.OWN_PROGRAM_AFTER == 16
    assert QuestionGenerator().reasoner.own_program_after == reasoner_module.GENERATOR_OWN_PROGRAM_AFTER == 128
    for bad in (-1, 2.5, True, "16"):
        with pytest.raises(ValueError, match="own_program_after must be an integer >= 0"):
            Reasoner(own_program_after=bad)
