"""Calibration and selective answering of probabilistic answers (issue #24): ECE, Brier score, reliability
bins, the accuracy-coverage curve and abstention, by hand; ``evaluate --answer-rule --abstain-below`` end to end."""

from __future__ import annotations

import json

import pytest

from clevr_poc.evaluation.calibration import (abstain, brier_score, calibration_report, coverage_curve,
                                              expected_calibration_error, reliability)
from clevr_poc.evaluation.report import EvaluationReport, ExampleResult

from evaluate_cli_support import run_cli
from test_evaluate_ns_vqa_cli import dataset  # noqa: F401  (the fixture)


def test_ece_brier_and_bins_by_hand():
    pairs = [(0.9, True), (0.9, False), (0.2, False), (1.0, True)]
    bins = reliability(pairs)
    assert [b.count for b in bins] == [0, 0, 1, 0, 0, 0, 0, 0, 0, 3]          # 1.0 falls in the last bin
    assert bins[9].mean_probability == pytest.approx(2.8 / 3) and bins[9].frequency == pytest.approx(2 / 3)
    # ECE = 3/4 |0.9333 - 0.6667| + 1/4 |0.2 - 0| = 0.2 + 0.05
    assert expected_calibration_error(pairs) == pytest.approx(0.25)
    assert brier_score(pairs) == pytest.approx((0.01 + 0.81 + 0.04 + 0.0) / 4)
    assert expected_calibration_error([]) == 0.0 and brier_score([]) == 0.0


def _result(i: int, confidence: float, right: bool) -> ExampleResult:
    gold = frozenset({"red"})
    predicted = gold if right else frozenset({"blue"})
    return ExampleResult(f"#{i}", gold, predicted, float(right), float(right), confidence=confidence,
                         marginals=(("red", confidence if right else 1 - confidence),
                                    ("blue", 1 - confidence if right else confidence)))


def test_coverage_curve_threshold_and_abstention():
    # 8 sure answers (7 right), then 0.5 and 0.4 (both wrong): all 10 answered -> 0.7
    results = [_result(i, 1.0, i != 0) for i in range(8)] + [_result(8, 0.5, False), _result(9, 0.4, False)]
    curve = coverage_curve(results)
    assert [(p.threshold, p.answered) for p in curve] == [(1.0, 8), (0.5, 9), (0.4, 10), (0.0, 10)]
    report = calibration_report(results)
    assert report.at_coverage.threshold == 0.5 and report.at_coverage.coverage == pytest.approx(0.9)
    assert report.at_coverage.exact_accuracy == pytest.approx(7 / 9)
    assert report.unthresholded.exact_accuracy == pytest.approx(0.7)
    assert report.questions == 10 and report.pairs == 20
    kept = abstain(EvaluationReport(tuple(results)), 0.5)
    assert kept.parse_failures == 1 and kept.exact_accuracy == pytest.approx(0.7)
    assert kept.results[9].error == "abstained: confidence 0.4000 < 0.5"
    excluded = abstain(EvaluationReport(tuple(results), parse_failure_policy="exclude"), 0.5)
    assert excluded.exact_accuracy == pytest.approx(7 / 9)
    assert calibration_report([ExampleResult("#0", frozenset(), frozenset(), 1.0, 1.0)]) is None
    with pytest.raises(ValueError):
        abstain(EvaluationReport(tuple(results)), 1.5)


def test_confidence_and_marginals_round_trip_through_report_json():
    result = _result(0, 0.75, True)
    again = ExampleResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.confidence == 0.75 and again.marginals == (("red", 0.75), ("blue", 0.25))


def test_evaluate_answer_rule_and_abstain_below(dataset, tmp_path, capsys):  # noqa: F811
    root, _ = dataset
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa",
                                "--answer-rule", "expected-jaccard", "--abstain-below", "0.5",
                                "--out", str(tmp_path / "r")], capsys)
    assert status == 0, err
    assert json.loads(out[-1]) == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 6}
    assert any(line.startswith("calibration of P(value in answer set) over 6 questions") for line in out)
    assert "abstained below 0.5: answered 6 of 6" in out
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    calibration = report["extra"]["calibration"]
    # gold scenes are certain: every marginal is 0 or 1 and right
    assert calibration["ece"] == 0.0 and calibration["brier"] == 0.0 and calibration["at_coverage"]["coverage"] == 1.0
    assert report["model"].endswith("[expected-jaccard, k=16]")
    assert all(e["confidence"] == 1.0 for e in report["examples"])
    assert (tmp_path / "r" / "plots" / "reliability.png").stat().st_size > 0
    assert (tmp_path / "r" / "plots" / "coverage.png").stat().st_size > 0


@pytest.mark.parametrize("flags, message", [
    (["--abstain-below", "0.5"], "--abstain-below needs --answer-rule"),
    (["--answer-rule", "map", "--abstain-below", "1.5"], "must be a probability in [0, 1]"),
    (["--top-k", "4"], "--top-k needs --answer-rule"),
])
def test_answer_rule_option_errors_are_one_line(dataset, flags, message, capsys):  # noqa: F811
    root, _ = dataset
    status, _, err = run_cli(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa", *flags],
                             capsys)
    assert status == 1 and len(err) == 1 and message in err[0]
