"""``evaluate --answer-rule RULE [--abstain-below P]``: the calibration of NS-VQA's probabilistic answers
and selective answering (issue #24; :mod:`clevr_poc.evaluation.calibration`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from clevr_poc.errors import FormatError


def check_answer_rule_arguments(args: argparse.Namespace) -> None:
    """``--answer-rule`` needs ``--model ns-vqa``; ``--abstain-below`` and a non-default ``--top-k`` need
    ``--answer-rule``; ``--abstain-below`` is a probability.

    Raises:
        FormatError: naming the flag and its value.
    """
    rule = getattr(args, "answer_rule", None)
    if rule is not None and getattr(args, "model", None) != "ns-vqa":
        raise FormatError("--answer-rule is used with --model ns-vqa only", field="--answer-rule", value=rule)
    abstain_below, top_k = getattr(args, "abstain_below", None), getattr(args, "top_k", 16)
    if rule is None and abstain_below is not None:
        raise FormatError("--abstain-below needs --answer-rule", field="--abstain-below", value=abstain_below)
    if rule is None and top_k != 16:
        raise FormatError("--top-k needs --answer-rule", field="--top-k", value=top_k)
    if abstain_below is not None and not 0.0 <= abstain_below <= 1.0:
        raise FormatError("must be a probability in [0, 1]", field="--abstain-below", value=abstain_below)


def apply_answer_rule(report: Any, abstain_below: float | None, out: str | None, *, plots: bool = True) -> Any:
    """The calibration of ``report`` (printed, stored under ``extra["calibration"]``, plotted to
    ``OUT/plots/reliability.png`` and ``coverage.png``), then the abstentions below ``abstain_below``."""
    from clevr_poc.evaluation.calibration import abstain, calibration_report

    calibration = calibration_report(report.results)
    extra = dict(report.extra)
    if calibration is not None:
        print(calibration.describe())
        extra["calibration"] = calibration.to_json()
        if out and plots:
            from clevr_poc.evaluation.calibration_plots import plot_coverage, plot_reliability

            plot_reliability(calibration, Path(out) / "plots" / "reliability.png")
            plot_coverage(calibration, Path(out) / "plots" / "coverage.png")
    if abstain_below is not None:
        report = abstain(report, abstain_below)
        answered = sum(1 for r in report.results if r.predicted is not None)
        extra["abstain_below"] = abstain_below
        print(f"abstained below {abstain_below:g}: answered {answered} of {report.n}")
    return replace(report, extra=extra)


__all__ = ["apply_answer_rule", "check_answer_rule_arguments"]
