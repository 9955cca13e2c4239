"""Calibration and selective answering of probabilistic answers (issue #24).

A probabilistic model (:class:`clevr_poc.probabilistic_pipeline.ProbabilisticPipeline`) gives with each
answer ``P(v in answer set)`` for every value ``v`` of the queried attribute (the marginals) and a
*confidence*, the probability that its answer set is exactly right. Over the ``n`` questions of a report:

- **reliability**: the pairs ``(p, y)`` = (marginal, whether ``v`` is in the gold set), one per value of the
  queried attribute's domain and question, in ``B`` equal-width bins of ``p`` (``[0, 0.1), ...,
  [0.9, 1]``); per bin the mean ``p`` and the frequency of ``y = 1``;
- **ECE** (expected calibration error; Naeini et al., AAAI 2015; Guo et al., ICML 2017):
  ``sum_b (n_b / N) |mean p_b - freq_b|``;
- **Brier score** (Brier 1950): ``(1/N) sum (p - y)^2``;
- **accuracy against coverage** (selective answering, El-Yaniv & Wiener, JMLR 2010): answering only the
  questions whose confidence is at least ``t``, coverage ``c(t)`` = share answered and exact accuracy /
  Jaccard over those answered, for every ``t`` among the confidences; :attr:`CalibrationReport.at_coverage`
  picks the largest ``t`` that keeps at least 90 % coverage.

:func:`abstain` turns the answers below a threshold into abstentions (failed predictions with the reason
"abstained"), which the report then scores by its parse-failure policy (``wrong`` or ``exclude``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from clevr_poc.evaluation.report import EvaluationReport, ExampleResult

#: Bins of the reliability diagram and the ECE (equal width; Guo et al. 2017 use 10 or 15).
DEFAULT_BINS = 10
#: The coverage :attr:`CalibrationReport.at_coverage` keeps at least (issue #24: ">= 90 % coverage").
TARGET_COVERAGE = 0.9


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin ``[low, high)`` (the last one closed) of the reliability diagram."""

    low: float
    high: float
    count: int
    mean_probability: float
    frequency: float


@dataclass(frozen=True)
class CoveragePoint:
    """Selective answering at confidence threshold ``threshold``: ``answered`` of the questions
    (``coverage`` = answered / n) with exact accuracy and Jaccard over the answered ones."""

    threshold: float
    answered: int
    coverage: float
    exact_accuracy: float
    jaccard: float


@dataclass(frozen=True)
class CalibrationReport:
    """Calibration of ``P(value in answer set)`` and the accuracy-coverage curve (module doc).

    Attributes:
        questions: questions with marginals (the others, failures without probabilities, are left out).
        pairs: (marginal, outcome) pairs, one per value of the queried attribute per question.
        ece: expected calibration error, in [0, 1].
        brier: Brier score, in [0, 1].
        bins: the reliability diagram.
        coverage: the accuracy-coverage curve, threshold descending (coverage ascending).
        at_coverage: the point with the largest threshold whose coverage is at least :data:`TARGET_COVERAGE`.
        unthresholded: the point that answers every question (threshold 0).
    """

    questions: int
    pairs: int
    ece: float
    brier: float
    bins: tuple[ReliabilityBin, ...]
    coverage: tuple[CoveragePoint, ...]
    at_coverage: CoveragePoint
    unthresholded: CoveragePoint

    def describe(self) -> str:
        """Two lines for the console."""
        a, u = self.at_coverage, self.unthresholded
        return (f"calibration of P(value in answer set) over {self.questions} questions ({self.pairs} values): "
                f"ECE {self.ece:.4f}, Brier {self.brier:.4f}\n"
                f"selective answering: confidence >= {a.threshold:.4f} keeps {a.coverage:.1%} of the questions at "
                f"exact accuracy {a.exact_accuracy:.4f} (all questions: {u.exact_accuracy:.4f})")

    def to_json(self) -> dict[str, Any]:
        return {"questions": self.questions, "pairs": self.pairs, "ece": self.ece, "brier": self.brier,
                "reliability": [vars(b) for b in self.bins], "coverage": [vars(p) for p in self.coverage],
                "at_coverage": {**vars(self.at_coverage), "target": TARGET_COVERAGE},
                "unthresholded": vars(self.unthresholded)}


def _bin_index(p: float, bins: int) -> int:
    return min(int(p * bins), bins - 1)


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = DEFAULT_BINS) -> tuple[ReliabilityBin, ...]:
    """The equal-width reliability bins of ``(probability, outcome)`` pairs (empty bins included)."""
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for p, y in pairs:
        members[_bin_index(p, bins)].append((p, y))
    return tuple(ReliabilityBin(b / bins, (b + 1) / bins, len(m), sum(p for p, _ in m) / len(m) if m else 0.0,
                                sum(1 for _, y in m if y) / len(m) if m else 0.0) for b, m in enumerate(members))


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = DEFAULT_BINS) -> float:
    """``sum_b (n_b / N) |mean p_b - freq_b|`` (0.0 without pairs)."""
    total = len(pairs)
    return sum(b.count / total * abs(b.mean_probability - b.frequency) for b in reliability(pairs, bins)) if total else 0.0


def brier_score(pairs: Sequence[tuple[float, bool]]) -> float:
    """``mean (p - y)^2`` (0.0 without pairs)."""
    return sum((p - float(y)) ** 2 for p, y in pairs) / len(pairs) if pairs else 0.0


def _point(results: Sequence[ExampleResult], threshold: float, n: int) -> CoveragePoint:
    kept = [r for r in results if (r.confidence or 0.0) >= threshold]
    answered = len(kept)
    return CoveragePoint(threshold, answered, answered / n if n else 0.0,
                         sum(r.exact for r in kept) / answered if answered else 0.0,
                         sum(r.jaccard for r in kept) / answered if answered else 0.0)


def coverage_curve(results: Sequence[ExampleResult]) -> tuple[CoveragePoint, ...]:
    """Accuracy against coverage: one point per distinct confidence (rounded to 1e-6), threshold
    descending, plus threshold 0 (every question)."""
    thresholds = sorted({round(r.confidence or 0.0, 6) for r in results} | {0.0}, reverse=True)
    return tuple(_point(results, t, len(results)) for t in thresholds)


def calibration_report(results: Sequence[ExampleResult], bins: int = DEFAULT_BINS) -> CalibrationReport | None:
    """The :class:`CalibrationReport` of the results that carry marginals, or None when none does.

    The curve counts only those results (a failure without probabilities is left out of it too).
    """
    scored = [r for r in results if r.marginals]
    if not scored:
        return None
    pairs = [(float(p), v in r.gold) for r in scored for v, p in r.marginals]
    curve = coverage_curve(scored)
    at = max((p for p in curve if p.coverage >= TARGET_COVERAGE), key=lambda p: p.threshold)
    return CalibrationReport(len(scored), len(pairs), expected_calibration_error(pairs, bins), brier_score(pairs),
                             reliability(pairs, bins), curve, at, curve[-1])


def abstain(report: EvaluationReport, threshold: float) -> EvaluationReport:
    """``report`` with every answer whose confidence is below ``threshold`` turned into an abstention: no
    prediction (scored 0, or left out with ``parse_failures="exclude"``), error ``"abstained: confidence
    ... < threshold"``. Results without a confidence are kept as they are.

    Raises:
        ValueError: ``threshold`` outside [0, 1].
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the abstention threshold is a probability in [0, 1], got {threshold}")
    results = tuple(
        replace(r, predicted=None, exact=0.0, jaccard=0.0,
                error=f"abstained: confidence {r.confidence:.4f} < {threshold:g}")
        if r.confidence is not None and r.predicted is not None and r.confidence < threshold else r
        for r in report.results)
    return replace(report, results=results)


__all__ = ["CalibrationReport", "CoveragePoint", "DEFAULT_BINS", "ReliabilityBin", "TARGET_COVERAGE", "abstain",
           "brier_score", "calibration_report", "coverage_curve", "expected_calibration_error", "reliability"]
