"""Plots of a :class:`~clevr_poc.evaluation.calibration.CalibrationReport` (PNG, written atomically):
the reliability diagram of ``P(value in answer set)`` and exact accuracy against coverage."""

from __future__ import annotations

import os
from pathlib import Path

from clevr_poc.evaluation.calibration import CalibrationReport
from clevr_poc.evaluation.plots import _pyplot, _save


def plot_reliability(report: CalibrationReport, path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Reliability diagram: per bin the frequency of "value in the gold set" against the mean predicted
    probability (bars), the diagonal (perfect calibration) and the count per bin; returns the PNG path."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    width = report.bins[0].high - report.bins[0].low if report.bins else 0.1
    filled = [b for b in report.bins if b.count]
    ax.bar([b.low for b in filled], [b.frequency for b in filled], width=width, align="edge", alpha=0.6,
           edgecolor="black", label="observed frequency")
    ax.plot([0, 1], [0, 1], "k--", linewidth=1, label="perfect calibration")
    ax.plot([b.mean_probability for b in filled], [b.frequency for b in filled], "o", color="C3",
            label="bin mean probability")
    for b in filled:
        ax.annotate(str(b.count), (b.low + width / 2, min(b.frequency + 0.03, 1.02)), ha="center", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("P(value in answer set)")
    ax.set_ylabel("share of values in the gold answer set")
    ax.set_title(title or f"reliability (ECE {report.ece:.3f}, Brier {report.brier:.3f})", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    return _save(fig, path)


def plot_coverage(report: CalibrationReport, path: str | os.PathLike[str], *, title: str = "") -> Path:
    """Exact accuracy (and Jaccard) of the answered questions against coverage, the 90 %-coverage point
    marked; returns the PNG path."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.0))
    points = sorted(report.coverage, key=lambda p: p.coverage)
    ax.plot([p.coverage for p in points], [p.exact_accuracy for p in points], "-", label="exact accuracy")
    ax.plot([p.coverage for p in points], [p.jaccard for p in points], "-", alpha=0.7, label="Jaccard")
    a = report.at_coverage
    ax.plot([a.coverage], [a.exact_accuracy], "o", color="C3",
            label=f"threshold {a.threshold:.4f}: {a.coverage:.1%} answered")
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("coverage (share of questions answered)")
    ax.set_ylabel("score on the answered questions")
    ax.set_title(title or "selective answering by confidence", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    return _save(fig, path)


__all__ = ["plot_coverage", "plot_reliability"]
