"""Prompt builders: every ScienceQA format and every M3CoT strategy, checked against literal text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.mcot.mcot_data import load_m3cot
from clevr_poc.mcot.prompts import (build_m3cot_plan, build_scienceqa_prompt, normalize_m3cot_strategy,
                                    normalize_scienceqa_format, sample_demonstrations, scienceqa_context)

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


@pytest.fixture(scope="module")
def m3():
    return {r.id: r for r in load_m3cot(FIXTURES / "m3cot_data.jsonl")}


TEST_ITEM = ("Question: What happened to the ice?\n"
             "Context: Pat left an ice cube in the sun.\n"
             "Options: (A) it melted (B) it froze\n"
             "Answer:")


def test_qcm_ale_prompt_answer_first_with_lecture_and_explanation(scienceqa):
    prompt = build_scienceqa_prompt(scienceqa, ["101", "102"], "201", "QCM-ALE")
    assert prompt == (
        "Question: Which animal has fur?\nContext: N/A\nOptions: (A) frog (B) rabbit\n"
        "Answer: The answer is B. BECAUSE: Mammals have fur or hair.\\nBirds have feathers. "
        "A rabbit is a mammal. It has fur.\n\n"
        "Question: Which word is a noun?\nContext: N/A\nOptions: (A) quickly (B) table (C) blue\n"
        "Answer: The answer is B. BECAUSE: A noun names a person, place, or thing. Table names a thing.\n\n"
        + TEST_ITEM)


def test_qcm_ae_prompt_has_explanation_only(scienceqa):
    prompt = build_scienceqa_prompt(scienceqa, ["101"], "201", "QCM→AE")
    assert prompt == ("Question: Which animal has fur?\nContext: N/A\nOptions: (A) frog (B) rabbit\n"
                      "Answer: The answer is B. BECAUSE: A rabbit is a mammal. It has fur.\n\n" + TEST_ITEM)


def test_qcm_a_prompt_has_answer_only_and_empty_because_is_dropped(scienceqa):
    assert build_scienceqa_prompt(scienceqa, ["101"], "201", "qcm_a") == (
        "Question: Which animal has fur?\nContext: N/A\nOptions: (A) frog (B) rabbit\n"
        "Answer: The answer is B.\n\n" + TEST_ITEM)
    # problem 103 has neither lecture nor solution: "BECAUSE:" is removed as in the official builder
    assert build_scienceqa_prompt(scienceqa, ["103"], "201", "QCM-ALE").split("\n\n")[0].endswith("The answer is C.")


def test_zero_shot_prompt_and_caption_context(scienceqa):
    assert build_scienceqa_prompt(scienceqa, [], "201", "QCM-ALE") == TEST_ITEM
    assert scienceqa_context(scienceqa["204"]) == "Look at the arrows on the map."
    assert scienceqa_context(scienceqa["204"], use_caption=True) == \
        "Look at the arrows on the map. A river with arrows."
    assert scienceqa_context(scienceqa["202"]) == "N/A"
    assert scienceqa_context(scienceqa["202"], use_caption=True) == "A map of the world."


def test_demonstrations_follow_the_official_seeded_draw(scienceqa):
    train = scienceqa.split_ids("train")
    random.seed(3)
    expected = random.sample(list(train), 2)  # what the official runner does after random.seed(args.seed)
    assert sample_demonstrations(train, 2, random.Random(3)) == expected
    assert sample_demonstrations(train, 2, random.Random(3)) == sample_demonstrations(train, 2, random.Random(3))
    with pytest.raises(FormatError, match="fewer training problems"):
        sample_demonstrations(train, 4, random.Random(0))


def test_unknown_formats_and_strategies_are_typed_errors():
    with pytest.raises(FormatError, match="unknown ScienceQA prompt format"):
        normalize_scienceqa_format("QCM-LEA")
    with pytest.raises(FormatError, match="unknown M3CoT strategy"):
        normalize_m3cot_strategy("tree-of-thought")
    assert normalize_m3cot_strategy("DSP") == "desp-cot"


BASE_SCI1 = "[Question]\nWhich object is the largest?\n[Choices]\n(A) the cup\n(B) the house\n(C) the ball"


def test_m3cot_direct_prompt_matches_released_layout(m3):
    assert build_m3cot_plan(m3["sci-1"], "direct").turns == (BASE_SCI1,)
    assert build_m3cot_plan(m3["sci-2"], "direct").turns == (
        "[Context]\nThe sky was blue all day.\n\n[Question]\nWhich colour word is in the sentence?\n"
        "[Choices]\n(A) red\n(B) blue",)


def test_m3cot_cot_prompt_is_two_turns(m3):
    plan = build_m3cot_plan(m3["sci-1"], "cot")
    assert plan.turns == (BASE_SCI1 + "\n\nLet's think step-by-step!",
                          'Please select the correct answer from the ["(A)","(B)","(C)"] options.')


def test_m3cot_desp_cot_describes_the_image_first(m3):
    plan = build_m3cot_plan(m3["sci-1"], "desp-cot")
    assert plan.turns == (
        BASE_SCI1 + "\n\nDescribe the image information relevant to the question. Do not answer the choice "
                    "question directly.",
        'Then, provide your answer. Note, you must choose from ["(A)","(B)","(C)"] options.')


def test_m3cot_ccot_asks_for_a_scene_graph_then_the_answer(m3):
    first, second = build_m3cot_plan(m3["sci-1"], "ccot").turns
    assert first.startswith(BASE_SCI1 + "\n\nFor the provided image and its associated question, generate a scene "
                                        "graph in JSON format")
    assert first.endswith("relevant to answering the question.\n\nScene Graph:")
    assert second == ("Use the image and scene graph as context and answer the following question:\n" + BASE_SCI1
                      + "\nAnswer with the option's letter from the given choices directly.")
