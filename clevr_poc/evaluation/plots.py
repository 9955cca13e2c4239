"""Matplotlib plots of evaluation reports (PNG files, written atomically).

- :func:`plot_breakdown`: one report, one breakdown (e.g. per query attribute): grouped bars of exact
  accuracy and Jaccard index per group, ``n`` under each group;
- :func:`plot_breakdowns`: every breakdown of a report, one file each (``<prefix>by_<breakdown>.png``);
- :func:`plot_comparison`: several models side by side on one breakdown (or overall), one metric.

matplotlib is an optional dependency (``[generate]``/``[dev]`` extras); it is imported on first use with
the non-interactive ``Agg`` backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from clevr_poc.errors import ClevrPocError
from clevr_poc.evaluation.report import BREAKDOWNS, EvaluationReport

_LABELS = {"exact_accuracy": "exact accuracy", "jaccard": "Jaccard index"}
_XLABELS = {"attribute": "query attribute", "family": "question family", "template": "question template",
            "num_objects": "objects in the scene (hidden one included)", "environment": "environment id"}


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ClevrPocError("plots need matplotlib: pip install '.[generate]' in the clevr_poc folder") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str]) -> Path:
    from clevr_poc._io import atomic_open

    path = Path(path)
    try:
        with atomic_open(path) as handle:  # temp file, fsync, rename, the umask's mode
            fig.savefig(handle, dpi=120, bbox_inches="tight", format="png")
    finally:
        _pyplot().close(fig)
    return path


def _score_axis(ax: Any) -> None:
    """Scores in [0, 1], with headroom above 1 for the legend."""
    ax.set_ylim(0, 1.22)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.grid(axis="y", alpha=0.3)


def plot_breakdown(report: EvaluationReport, breakdown: str, path: str | os.PathLike[str]) -> Path:
    """Bar chart of exact accuracy and Jaccard index per group of ``breakdown``; returns the PNG path.

    Raises:
        KeyError: unknown breakdown (see :data:`~clevr_poc.evaluation.report.BREAKDOWNS`).
    """
    import numpy as np

    plt = _pyplot()
    groups = report.breakdown(breakdown)
    names = list(groups)
    x = np.arange(len(names))
    width = 0.38
    fig, ax = plt.subplots(figsize=(max(4.0, 0.55 * len(names) + 2.0), 3.6))
    exact = [groups[g].exact_accuracy for g in names]
    jaccard = [groups[g].jaccard for g in names]
    ax.bar(x - width / 2, exact, width, label=_LABELS["exact_accuracy"], color="#4C72B0")
    ax.bar(x + width / 2, jaccard, width, label=_LABELS["jaccard"], color="#DD8452")
    ax.set_xticks(x, [f"{g}\nn={groups[g].n}" for g in names],
                  rotation=45 if len(names) > 8 or breakdown == "template" else 0,
                  ha="right" if len(names) > 8 or breakdown == "template" else "center", fontsize=8)
    _score_axis(ax)
    ax.set_ylabel("score")
    ax.set_xlabel(_XLABELS.get(breakdown, breakdown))
    title = f"{report.model}" + (f" ({report.split})" if report.split else "")
    ax.set_title(f"{title}: by {_XLABELS.get(breakdown, breakdown)}", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", ncol=2, frameon=False)
    return _save(fig, path)


def plot_breakdowns(report: EvaluationReport, out_dir: str | os.PathLike[str], *, prefix: str = "",
                    breakdowns: Sequence[str] = BREAKDOWNS) -> list[Path]:
    """:func:`plot_breakdown` for each breakdown, as ``<out_dir>/<prefix>by_<breakdown>.png``."""
    out = Path(out_dir)
    return [plot_breakdown(report, name, out / f"{prefix}by_{name}.png") for name in breakdowns]


def plot_comparison(reports: Mapping[str, EvaluationReport], path: str | os.PathLike[str], *,
                    breakdown: str | None = "attribute", metric: str = "exact_accuracy") -> Path:
    """Several models on one chart: bars per group of ``breakdown`` (None: overall), one bar per model.

    Args:
        reports: model name -> report (legend order).
        breakdown: a breakdown name, or None for the overall score only.
        metric: ``"exact_accuracy"`` or ``"jaccard"``.
    """
    import numpy as np

    if metric not in _LABELS:
        raise KeyError(f"unknown metric {metric!r}; expected one of {list(_LABELS)}")
    plt = _pyplot()
    per_model: dict[str, dict[str, float]] = {}
    names: list[str] = []
    for model, report in reports.items():
        if breakdown is None:
            scores = {"all": getattr(report, metric)}
        else:
            scores = {g: getattr(s, metric) for g, s in report.breakdown(breakdown).items()}
        per_model[model] = scores
        names += [g for g in scores if g not in names]
    x = np.arange(len(names))
    width = 0.8 / max(1, len(per_model))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.5 * len(names) * max(1, len(per_model)) + 2.0), 3.6))
    for i, (model, scores) in enumerate(per_model.items()):
        ax.bar(x - 0.4 + width * (i + 0.5), [scores.get(g, 0.0) for g in names], width, label=model)
    ax.set_xticks(x, names, fontsize=8)
    _score_axis(ax)
    ax.set_ylabel(_LABELS[metric])
    ax.set_xlabel("overall" if breakdown is None else _XLABELS.get(breakdown, breakdown))
    ax.legend(fontsize=8, loc="upper center", ncol=min(4, max(1, len(per_model))), frameon=False)
    return _save(fig, path)
