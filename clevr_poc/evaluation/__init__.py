"""Evaluation of CLEVR-POC models (paper §4.2): exact accuracy (eq. 2) and Jaccard index (eq. 3).

::

    from clevr_poc.evaluation import evaluate, table2_markdown, write_outputs
    report = evaluate(model, examples)        # model.predict_batch(examples) -> list[Prediction]
    print(report.exact_accuracy, report.jaccard, report.parse_failures)
    report.breakdown("attribute")             # {"color": GroupScore(...), ...}
    write_outputs(report, "results/")         # report.json, table2.md, breakdowns.md, plots/

See :mod:`clevr_poc.evaluation.metrics` for the edge cases (both sets empty -> Jaccard 1.0; a parse
failure scores 0), :mod:`clevr_poc.evaluation.model_protocol` for the model protocol,
:mod:`clevr_poc.evaluation.report` for the breakdowns (:mod:`.evaluator` runs a model, :mod:`.precomputed` scores predictions already made, :mod:`.checkpoint`
resumes a run).
"""

from clevr_poc.evaluation.metrics import (
    LABEL_INDEX, NUM_LABELS, exact_accuracy, exact_match, exact_match_scores, from_multi_hot, jaccard_index,
    jaccard_scores, mean_jaccard, parsed_mask, to_multi_hot,
)
from clevr_poc.evaluation.outputs import write_outputs
from clevr_poc.evaluation.checkpoint import Checkpoint
from clevr_poc.evaluation.evaluator import evaluate, example_key, model_name, score_example
from clevr_poc.evaluation.model_protocol import ExampleModel, FunctionModel, Model
from clevr_poc.evaluation.precomputed import PredictionTable, score_predictions
from clevr_poc.evaluation.report import (
    BREAKDOWNS, EvaluationReport, ExampleResult, GroupScore, Prediction, normalize_prediction,
)
from clevr_poc.evaluation.tables import breakdown_markdown, table2_markdown

__all__ = [
    "BREAKDOWNS", "Checkpoint", "EvaluationReport", "ExampleModel", "ExampleResult", "FunctionModel", "GroupScore",
    "LABEL_INDEX", "Model", "NUM_LABELS", "Prediction",
    "PredictionTable", "example_key", "model_name", "score_example",
    "breakdown_markdown", "evaluate", "exact_accuracy", "exact_match", "exact_match_scores", "from_multi_hot",
    "jaccard_index", "jaccard_scores", "mean_jaccard", "normalize_prediction", "parsed_mask",
    "score_predictions", "table2_markdown", "to_multi_hot", "write_outputs",
]
