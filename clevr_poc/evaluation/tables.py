"""Markdown tables: the paper's Table 2 layout and per-breakdown tables.

Table 2 of the paper has two sub-tables, (a) exact answer accuracy and (b) Jaccard index; rows are
dataset sizes (2000 / 6000 / 12000) or splits, columns are models, numbers have 4 decimals and a missing
cell is ``-``. :func:`table2_markdown` writes exactly that::

    (a) Exact answer accuracy

    | Dataset | NS-VQA (gold) | GPT-4 |
    |---|---:|---:|
    | 2000 | 1.0000 | 0.4626 |
    | 6000 | 1.0000 | - |

    (b) Jaccard index

    | Dataset | NS-VQA (gold) | GPT-4 |
    |---|---:|---:|
    | 2000 | 1.0000 | 0.5164 |
    | 6000 | 1.0000 | - |
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from clevr_poc.evaluation.report import BREAKDOWNS, EvaluationReport

Cell = EvaluationReport | Mapping[str, float] | None


def _metric(cell: Cell, metric: str) -> float | None:
    if cell is None:
        return None
    if isinstance(cell, EvaluationReport):
        return cell.exact_accuracy if metric == "exact_accuracy" else cell.jaccard
    value = cell.get(metric)
    return None if value is None else float(value)


def _escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(rows: Mapping[str, Mapping[str, Cell]], models: Sequence[str], metric: str, row_header: str,
           digits: int) -> list[str]:
    lines = ["| " + " | ".join([_escape(row_header), *(_escape(m) for m in models)]) + " |",
             "|---|" + "".join("---:|" for _ in models)]
    for row, cells in rows.items():
        values = []
        for model in models:
            value = _metric(cells.get(model), metric)
            values.append("-" if value is None else f"{value:.{digits}f}")
        lines.append("| " + " | ".join([_escape(row), *values]) + " |")
    return lines


def table2_markdown(rows: Mapping[str, Mapping[str, Cell]], *, models: Sequence[str] | None = None,
                    row_header: str = "Dataset", digits: int = 4) -> str:
    """The paper's Table 2 layout in Markdown: (a) exact answer accuracy, (b) Jaccard index.

    Args:
        rows: row label (dataset size or split) -> model name -> an :class:`EvaluationReport`, a mapping
            with ``"exact_accuracy"`` / ``"jaccard"`` floats, or None (printed ``-``). Row order is kept.
        models: column order (default: models in order of first appearance).
        row_header: header of the first column.
        digits: decimals (4, as in the paper).

    Returns:
        Markdown text ending with a newline (format in the module docstring).
    """
    if models is None:
        seen: dict[str, None] = {}
        for cells in rows.values():
            for model in cells:
                seen.setdefault(model, None)
        models = list(seen)
    parts = ["(a) Exact answer accuracy", ""]
    parts += _table(rows, models, "exact_accuracy", row_header, digits)
    parts += ["", "(b) Jaccard index", ""]
    parts += _table(rows, models, "jaccard", row_header, digits)
    return "\n".join(parts) + "\n"


_TITLES = {
    "attribute": "By query attribute",
    "family": "By question family (template file)",
    "template": "By question template",
    "num_objects": "By number of objects (hidden one included)",
    "environment": "By environment",
}


def breakdown_markdown(report: EvaluationReport, *, breakdowns: Sequence[str] = BREAKDOWNS,
                       digits: int = 4) -> str:
    """Markdown summary of one report: headline numbers, parse failures, then one table per breakdown
    (columns ``group | n | exact accuracy | Jaccard | parse failures``)."""
    lines = [
        f"## {_escape(report.model)}" + (f" on {_escape(report.split)}" if report.split else ""),
        "",
        f"- questions: {report.n}",
        f"- exact accuracy: {report.exact_accuracy:.{digits}f}",
        f"- Jaccard index: {report.jaccard:.{digits}f}",
        f"- parse failures: {report.parse_failures} ({report.parse_failure_rate:.2%}; "
        f"scored as {'wrong' if report.parse_failure_policy == 'wrong' else 'excluded'})"
        + (f": {report.image_failures} unreadable images (never parsed or answered), {report.model_parse_failures} "
           f"of the {report.n - report.image_failures} questions the model saw" if report.image_failures else ""),
    ]
    for reason, count in report.failure_reasons().items():
        lines.append(f"  - {_escape(reason)}: {count}")
    program = report.extra.get("program_accuracy")  # NS-VQA with a parser (evaluate --query bilstm|llm)
    if isinstance(program, Mapping) and "semantic_accuracy" in program:
        lines.append(f"- program accuracy: literal {program['accuracy']:.{digits}f} (equal to the official-form "
                     f"gold program up to renaming and order), semantic {program['semantic_accuracy']:.{digits}f} "
                     f"(same answer set)" + (f", over the {program['n']} questions parsed"
                                             if program.get("image_failures") else ""))
    for name in breakdowns:
        lines += ["", f"### {_TITLES.get(name, name)}", "",
                  "| group | n | exact accuracy | Jaccard | parse failures |", "|---|---:|---:|---:|---:|"]
        for group, score in report.breakdown(name).items():
            lines.append(f"| {_escape(group)} | {score.n} | {score.exact_accuracy:.{digits}f} | "
                         f"{score.jaccard:.{digits}f} | {score.parse_failures} |")
    return "\n".join(lines) + "\n"
