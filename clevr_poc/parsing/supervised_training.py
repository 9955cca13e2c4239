"""Supervised pretraining and evaluation of the BiLSTM question parser (paper §4.1.2, §4.3 RQ2, Table 3).

- :func:`load_pairs` reads (question, ASP query, answer) triples of one split of a dataset folder;
- :func:`supervised_loss` is the masked cross-entropy of the gold choice tokens (teacher forcing; the
  grammar's masks are applied as in decoding, so forced tokens cost nothing);
- :func:`pretrain` runs Adam over the pretraining pairs (NS-VQA: batch 64, learning rate 7e-4);
- :func:`evaluate` reports **program accuracy** two ways -- *literal* (equal to the official-form gold
  program up to variable renaming and literal order, :func:`~clevr_poc.parsing.equivalence.program_accuracy`,
  the paper's measure) and *semantic* (the same answer set as the gold program on the example) --
  and **answer accuracy** (exact and Jaccard, :mod:`clevr_poc.evaluation.metrics`) of greedy parses
  answered by the :class:`~clevr_poc.reasoning.Reasoner` on the gold partial scene (the paper's
  NS-VQA setting: perfect perception, §4.3 RQ2).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F

from clevr_poc.dataset_reader import Example, load_dataset
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.evaluation.metrics import exact_accuracy, mean_jaccard
from clevr_poc.parsing.equivalence import program_accuracy
from clevr_poc.parsing.grammar import GrammarError
from clevr_poc.parsing.seq2seq import MASKED_LOGIT, BiLSTMParser, choice_targets
from clevr_poc.parsing.vocabulary import QUERY_INDEX, QUERY_TOKENS, query_tokens
from clevr_poc.reasoning import Reasoner

__all__ = ["ParserPair", "Batch", "Evaluation", "load_pairs", "draw_indices", "draw_pairs", "make_batch", "supervised_loss", "batches",
           "pretrain", "cosine_lr", "evaluate", "answer_queries"]


@dataclass
class ParserPair:
    """One training/evaluation item.

    Attributes:
        question: the English question.
        query: the gold ASP query (as in the dataset).
        answer: the gold answer set.
        example: the dataset example (environment, partial scene) for answering.
        choices: gold choice-token indices (see :func:`~.seq2seq.choice_targets`).
        masks: ``(len(choices), vocab)`` bool grammar masks at those choices.
    """

    question: str
    query: str
    answer: frozenset[str]
    example: Example
    choices: list[int] = field(repr=False, default_factory=list)
    masks: torch.Tensor | None = field(repr=False, default=None)


def load_pairs(dataset: str | Path, split: str, *, limit: int | None = None, seed: int = 0) -> list[ParserPair]:
    """The labelled questions of one split, as :class:`ParserPair` objects.

    Args:
        dataset: a dataset folder (ours or the official layout, see :func:`clevr_poc.dataset_reader.load_dataset`).
        split: ``train``, ``val``, ``test`` (or the official names).
        limit: keep this many pairs, drawn at random (``seed``) from the split; None keeps all in order.
        seed: the draw's seed.

    Raises:
        FormatError: a bad folder or split, a question without an answer, or a gold query outside the
            parser's token set (naming the question's image index).
    """
    data = load_dataset(dataset, split=split)
    indices = draw_indices(len(data), limit, seed, split) if limit is not None else list(range(len(data)))
    pairs = []
    for i in indices:
        example = data[i]
        question = example.question
        if question.answer is None:
            raise FormatError("question has no answer", source=data.root, field=f"{split}[{question.image_index}]")
        try:
            tokens = [QUERY_INDEX[t] for t in query_tokens(question.asp_query)]
            choices, masks = choice_targets(tokens)
        except (ClevrPocError, GrammarError) as exc:
            raise FormatError(f"gold query outside the parser's language: {exc}", source=data.root,
                              field=f"{split}[{question.image_index}].asp_query") from None
        pairs.append(ParserPair(question.text, question.asp_query, frozenset(question.answer), example,
                                choices, masks))
    return pairs


def draw_indices(total: int, limit: int, seed: int, split: str = "train") -> list[int]:
    """``limit`` indices out of ``range(total)`` drawn with ``seed`` (sorted); the same draw as
    :func:`load_pairs` (``limit=..., seed=...``) and :func:`draw_pairs`.

    Raises:
        FormatError: ``limit`` < 1 or larger than ``total``.
    """
    if limit < 1:
        raise FormatError("must be at least 1", field="limit", value=limit)
    if limit > total:
        raise FormatError(f"the {split} split has only {total} questions", field="limit", value=limit)
    indices = list(range(total))
    random.Random(seed).shuffle(indices)
    return sorted(indices[:limit])


def draw_pairs(pairs: Sequence[ParserPair], limit: int, seed: int) -> list[ParserPair]:
    """``limit`` of ``pairs`` drawn with ``seed`` (the pretraining pairs: paper Table 3's sample sizes)."""
    return [pairs[i] for i in draw_indices(len(pairs), limit, seed)]


@dataclass
class Batch:
    """Padded tensors of a batch: ``words (B, S)``, ``lengths (B,)``, ``targets (B, T)`` (0-padded
    choice tokens), ``masks (B, T, vocab)`` bool."""

    words: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor
    masks: torch.Tensor


def make_batch(parser: BiLSTMParser, pairs: Sequence[ParserPair]) -> Batch:
    words, lengths = parser.encode([p.question for p in pairs])
    steps = max(len(p.choices) for p in pairs)
    targets = torch.zeros(len(pairs), steps, dtype=torch.long)
    masks = torch.zeros(len(pairs), steps, len(QUERY_TOKENS), dtype=torch.bool)
    for i, p in enumerate(pairs):
        targets[i, :len(p.choices)] = torch.tensor(p.choices, dtype=torch.long)
        masks[i, :len(p.choices)] = p.masks
    return Batch(words, lengths, targets, masks)


def supervised_loss(parser: BiLSTMParser, batch: Batch, *, masked: bool = True) -> torch.Tensor:
    """Mean (over gold choice tokens) cross-entropy of the grammar-masked decoder distribution.

    ``masked=False`` (ablation): the softmax runs over every token, as in NS-VQA, so the network also
    learns to give tokens outside the grammar a low probability (needed for unconstrained sampling).
    """
    logits = parser.model(batch.words, batch.lengths, batch.targets)
    if masked:
        logits = logits.masked_fill(~batch.masks, MASKED_LOGIT)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch.targets.reshape(-1), ignore_index=0)


def batches(pairs: Sequence[ParserPair], batch_size: int, seed: int, start_step: int = 0) -> Iterator[list[ParserPair]]:
    """Endless batches: each epoch a fresh permutation (``seed`` and the epoch number), cut into groups of
    8 batches sorted by target length (less padding). Deterministic, so a resumed run skips
    ``start_step`` batches and continues with the same data."""
    per_epoch = max(1, -(-len(pairs) // batch_size))
    epoch = start_step // per_epoch
    offset = start_step % per_epoch
    while True:
        order = list(range(len(pairs)))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        grouped: list[list[int]] = []
        for g in range(0, len(chunks), 8):
            group = sorted((i for chunk in chunks[g:g + 8] for i in chunk), key=lambda i: len(pairs[i].choices))
            grouped += [group[i:i + batch_size] for i in range(0, len(group), batch_size)]
        random.Random(seed * 1_000_003 + epoch + 7).shuffle(grouped)
        for chunk in grouped[offset:]:
            yield [pairs[i] for i in chunk]
        epoch += 1
        offset = 0


def cosine_lr(base: float, step: int, steps: int, floor: float = 0.02) -> float:
    """Learning rate of step ``step`` (1-based) of ``steps``: cosine decay from ``base`` to ``floor * base``.

    NS-VQA trains with a constant rate; with a few hundred steps on few pairs, a constant 7e-4..2e-3
    left program accuracy oscillating by several points between checkpoints in our runs, the decay
    settles it (docs/parser.md).
    """
    progress = min(max(step - 1, 0) / max(steps - 1, 1), 1.0)
    return base * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def pretrain(parser: BiLSTMParser, pairs: Sequence[ParserPair], *, steps: int, optimizer: torch.optim.Optimizer,
             batch_size: int = 64, seed: int = 0, start_step: int = 0, lr: float | None = None,
             masked: bool = True, on_step: Callable[[int, float], None] | None = None,
             progress: bool = True) -> float:
    """Supervised training of ``parser`` on (question, program) ``pairs`` for ``steps`` Adam steps.

    Args:
        parser: the parser (trained in place).
        pairs: pretraining pairs.
        steps: total steps (including ``start_step`` already done).
        optimizer: the optimizer over ``parser.model.parameters()`` (NS-VQA: Adam, lr 7e-4).
        batch_size: pairs per step (NS-VQA: 64).
        seed: batch order seed.
        start_step: steps already done (resume).
        lr: base learning rate of the cosine schedule (:func:`cosine_lr`); None keeps the optimizer's
            rate constant.
        masked: grammar-masked loss (default; see :func:`supervised_loss`).
        on_step: called after each step with (step number, loss) -- checkpoints.
        progress: tqdm bar.

    Returns:
        The mean loss over the last 20 steps.
    """
    from tqdm import tqdm

    parser.model.train()
    recent: list[float] = []
    stream = batches(pairs, batch_size, seed, start_step)
    with tqdm(total=steps, initial=start_step, desc="pretrain", disable=not progress, leave=False) as bar:
        for step in range(start_step + 1, steps + 1):
            if lr is not None:
                for group in optimizer.param_groups:
                    group["lr"] = cosine_lr(lr, step, steps)
            batch = make_batch(parser, next(stream))
            loss = supervised_loss(parser, batch, masked=masked)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parser.model.parameters(), 5.0)
            optimizer.step()
            value = loss.item()
            recent = (recent + [value])[-20:]
            bar.update(1)
            bar.set_postfix(loss=f"{sum(recent) / len(recent):.4f}")
            if on_step is not None:
                on_step(step, value)
    return sum(recent) / len(recent) if recent else float("nan")


@dataclass(frozen=True)
class Evaluation:
    """Metrics of a parser on a split.

    Attributes:
        questions: number of questions.
        program_accuracy: *literal* program accuracy: share of parses equal to the gold program (up to
            variable renaming and literal order; the paper's measure).
        semantic_program_accuracy: share of parses whose answer set on the example (gold partial scene)
            equals the gold program's.
        exact_accuracy: share of exactly right answer sets (paper eq. 2).
        jaccard: mean Jaccard index of the answer sets (paper eq. 3).
        failures: questions whose parse could not be answered (solver time-out; constrained parses are
            always valid queries).
        seconds: wall-clock time of parsing and answering.
    """

    questions: int
    program_accuracy: float
    semantic_program_accuracy: float
    exact_accuracy: float
    jaccard: float
    failures: int
    seconds: float

    def to_json(self) -> dict:
        return {"questions": self.questions, "program_accuracy": self.program_accuracy,
                "semantic_program_accuracy": self.semantic_program_accuracy,
                "exact_accuracy": self.exact_accuracy, "jaccard": self.jaccard, "failures": self.failures,
                "seconds": round(self.seconds, 2)}


def answer_queries(reasoner: Reasoner, pairs: Sequence[ParserPair], queries: Sequence[str | None]) -> list[frozenset[str] | None]:
    """Answer each query on its pair's environment and gold partial scene (None for an invalid query or
    a solver failure)."""
    answers: list[frozenset[str] | None] = []
    for pair, query in zip(pairs, queries):
        if query is None:
            answers.append(None)
            continue
        try:
            answers.append(reasoner.answer(pair.example.environment, pair.example.partial_scene, query).values)
        except ClevrPocError:
            answers.append(None)
    return answers


def evaluate(parser: BiLSTMParser, pairs: Sequence[ParserPair], *, reasoner: Reasoner | None = None) -> Evaluation:
    """Program accuracy and answer accuracy of greedy parses of ``pairs`` (see the module docstring)."""
    started = time.perf_counter()
    reasoner = reasoner or Reasoner()
    predictions = parser.parse_batch([p.question for p in pairs])
    answers = answer_queries(reasoner, pairs, predictions)
    gold_program_answers = answer_queries(reasoner, pairs, [p.query for p in pairs])
    golds = [p.answer for p in pairs]
    return Evaluation(
        questions=len(pairs),
        program_accuracy=program_accuracy(predictions, [p.query for p in pairs]),
        semantic_program_accuracy=(sum(a is not None and a == g for a, g in zip(answers, gold_program_answers))
                                   / len(pairs) if pairs else 0.0),
        exact_accuracy=exact_accuracy(golds, answers),
        jaccard=mean_jaccard(golds, answers),
        failures=sum(a is None for a in answers),
        seconds=time.perf_counter() - started,
    )
