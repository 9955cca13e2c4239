"""Write an evaluation's files: JSON report, Markdown tables and plots, into one folder."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from clevr_poc._io import atomic_write_json, atomic_write_text
from clevr_poc.evaluation.report import EvaluationReport
from clevr_poc.evaluation.tables import breakdown_markdown, table2_markdown


def write_outputs(report: EvaluationReport | Mapping[str, EvaluationReport], out_dir: str | os.PathLike[str], *,
                  plots: bool = True, row_header: str = "Split") -> dict[str, Path]:
    """Write the files of one or several reports (all atomically) into ``out_dir``:

    - ``report.json`` (one report) or ``report_<model>.json`` (several): :meth:`EvaluationReport.to_json`
      with per-example results;
    - ``predictions.json`` / ``predictions_<model>.json``: :meth:`EvaluationReport.predictions`, the
      scoring-only input format (``image_filename`` -> values or null);
    - ``table2.md``: the paper's Table 2 layout (rows = splits, columns = models);
    - ``breakdowns.md``: headline numbers, parse failures and every breakdown, per model;
    - ``plots/<model>_by_<breakdown>.png`` (when ``plots`` and matplotlib is installed), plus
      ``plots/compare_<metric>.png`` when there are several models.

    Args:
        report: one report, or model name -> report.
        out_dir: output folder (created).
        plots: write PNG plots.
        row_header: first-column header of ``table2.md``.

    Returns:
        name -> path of every file written.
    """
    out = Path(out_dir)
    reports = {report.model: report} if isinstance(report, EvaluationReport) else dict(report)
    written: dict[str, Path] = {}
    single = len(reports) == 1
    for model, rep in reports.items():
        name = "report.json" if single else f"report_{_slug(model)}.json"
        written[name] = rep.to_file(out / name)
        name = "predictions.json" if single else f"predictions_{_slug(model)}.json"
        written[name] = atomic_write_json(out / name, rep.predictions(), indent=1)
    rows: dict[str, dict[str, EvaluationReport]] = {}
    for model, rep in reports.items():
        rows.setdefault(rep.split or "all", {})[model] = rep
    written["table2.md"] = atomic_write_text(out / "table2.md", table2_markdown(rows, row_header=row_header))
    written["breakdowns.md"] = atomic_write_text(
        out / "breakdowns.md", "\n".join(breakdown_markdown(rep) for rep in reports.values()))
    if plots:
        from clevr_poc.evaluation.plots import plot_breakdowns, plot_comparison

        for model, rep in reports.items():
            for path in plot_breakdowns(rep, out / "plots", prefix=f"{_slug(model)}_"):
                written[f"plots/{path.name}"] = path
        if not single:
            for metric in ("exact_accuracy", "jaccard"):
                path = plot_comparison(reports, out / "plots" / f"compare_{metric}.png", metric=metric)
                written[f"plots/{path.name}"] = path
    return written


def _slug(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")
    return cleaned or "model"
