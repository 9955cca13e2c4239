"""Answer extraction: official ScienceQA and M3CoT rules, robust mode, and the two failure policies."""

from __future__ import annotations

import random

import pytest

from clevr_poc.mcot.extraction import (Extraction, FailurePolicy, extract_m3cot, extract_scienceqa, resolve,
                                       strip_eos)


# -- ScienceQA official rule: exactly one "The answer is X." naming an option ----------------------------------
@pytest.mark.parametrize("text, letter", [
    ("The answer is B. BECAUSE: lecture text", "B"),
    ("The answer is A.", "A"),
    ("The answer is C,", "C"),                       # the released regex's "." is a wildcard
    ("The answer is B. The answer is B.", None),    # two matches -> failure
    ("the answer is B.", None),                     # case-sensitive
    ("The answer is (B).", None),
    ("The answer is E.", None),                     # beyond the 3 options
    ("B", None),
    ("", None),
])
def test_scienceqa_official_rule(text, letter):
    assert extract_scienceqa(text, 3).letter == letter


@pytest.mark.parametrize("text, letter, method", [
    ("A</s>", "A", "leading-letter"),
    ("(C) blue", "C", "leading-letter"),
    ("B. table", "B", "leading-letter"),
    ("Answer: B", "B", "answer-phrase"),
    ("The answer is (B).", "B", "answer-phrase"),
    ("The answer is B. The answer is C.", "B", "answer-phrase"),  # answer first: the first statement wins
    ("the answer is c", "C", "answer-phrase"),
    ("table", "B", "option-text"),
    ("A noun names a thing.", None, "none"),        # the article "A" is not an option
    ("The answer is E.", None, "none"),
])
def test_scienceqa_robust_rule(text, letter, method):
    result = extract_scienceqa(text, 3, mode="robust", choices=("quickly", "table", "blue"))
    assert (result.letter, result.method) == (letter, method)


def test_robust_keeps_every_official_answer():
    for text in ("The answer is B. BECAUSE: x", "The answer is A.", "The answer is C,"):
        assert extract_scienceqa(text, 3, mode="robust").letter == extract_scienceqa(text, 3).letter


# -- M3CoT official rule ------------------------------------------------------------------------------------
CHOICES = ("the cup", "the house", "the ball")


@pytest.mark.parametrize("text, letter, method", [
    ("The largest object is:\n(B) the house.", "B", "paren"),
    ("(A) is wrong; the answer is (c)", "C", "paren"),              # last (X), upper-cased
    ("Maybe (A)... [Answer] (C) [Rationale] (B)", "C", "paren"),     # text after [Answer], before [Rationale]
    ("(Z)", "Z", "paren"),                                            # beyond the options: kept (scored wrong)
    ("It is the ball, not the cup.", "C", "option-text"),             # last option *in option order*
    ("Option B!", "B", "letter"),
    ("I think it is a house", "A", "lower-letter"),                   # the article "a" reads as option A
    ("B</s>", None, "none"),
    ("Nothing to see", None, "none"),
])
def test_m3cot_official_rule(text, letter, method):
    result = extract_m3cot(text, CHOICES)
    assert (result.letter, result.method) == (letter, method)


@pytest.mark.parametrize("text, letter, method", [
    ("B</s>", "B", "leading-letter"),
    ("(B) the house<|im_end|>", "B", "paren"),
    ("I think it is a house", None, "none"),                          # no lower-case letter fallback
    ("It is the ball, not the cup.", "A", "option-text"),             # latest in the text
    ("The answer is:\n(B", "B", "answer-phrase"),
    ("(Z)", None, "none"),
    ("Between A and C I pick C", "C", "letter"),
])
def test_m3cot_robust_rule(text, letter, method):
    result = extract_m3cot(text, CHOICES, mode="robust")
    assert (result.letter, result.method) == (letter, method)


def test_strip_eos():
    assert strip_eos(" The answer is A.</s> ") == "The answer is A."
    assert strip_eos("<|eot_id|>B<|end_of_text|>") == "B"


# -- failure policies ---------------------------------------------------------------------------------------
def test_policy_wrong_leaves_unparsed_without_prediction():
    resolved = resolve(Extraction(None, "none"), 4, FailurePolicy.WRONG, random.Random(0))
    assert (resolved.index, resolved.parsed, resolved.guessed) == (None, False, False)


def test_policy_random_draws_like_the_official_runner():
    official = random.Random(3)
    expected = [official.choice(range(n)) for n in (4, 2, 5, 3)]
    rng = random.Random(3)
    got = [resolve(Extraction(None, "none"), n, "random", rng).index for n in (4, 2, 5, 3)]
    assert got == expected
    assert all(resolve(Extraction(None, "none"), 3, "random", rng).guessed for _ in range(3))


def test_parsed_answers_are_never_guessed():
    rng = random.Random(0)
    assert resolve(Extraction("C", "paren"), 4, "random", rng).index == 2
    beyond = resolve(Extraction("Z", "paren"), 4, "random", rng)
    assert (beyond.index, beyond.parsed, beyond.guessed) == (-1, True, False)
