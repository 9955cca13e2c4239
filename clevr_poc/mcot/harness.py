"""Run a chat backend on ScienceQA / M3CoT and score model outputs (official or robust extraction).

Running writes resumable result files atomically every ``save_every`` items:

* ScienceQA — the official result layout ``{"acc", "correct", "count", "shot_qids", "args", "results",
  "outputs"}`` (``outputs``: ``{qid: text}``, ``results``: ``{qid: predicted index}``, -1 = none).
* M3CoT — the released experiment layout, one JSON object per line:
  ``{"id", "choices", "answer", "domain", "topic", "messages": [user, reply, (user, reply)]}``.

Scoring reads such files (``outputs`` / the last message) and returns a JSON-ready summary.

Images (``images=``, :data:`IMAGE_MODES`): ``none`` sends text only (the default, as in the text-only runs);
``send`` attaches the item's image to its (first) user turn as an OpenAI ``image_url`` part, before the
prompt text (ScienceQA: the test item's ``images/<pid>/image.png``; demonstrations stay text, as in the
official prompt); ``caption`` (ScienceQA only) puts the official caption into the context instead, for
text-only models. With ``workers`` > 1 that many requests run at once; results are saved in input order.
"""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from clevr_poc._io import atomic_write_json, atomic_write_text, loads_json, read_json, read_text
from clevr_poc.errors import FormatError
from clevr_poc.llm.base import ChatBackend, PromptTooLongError
from clevr_poc.mcot.mcot_data import M3CoTRecord, ScienceQADataset, parse_m3cot_record
from clevr_poc.mcot.extraction import (ExtractionMode, FailurePolicy, extract_m3cot, extract_scienceqa,
                                       resolve)
from clevr_poc.mcot.text_metrics import (ExplanationScores, ScoredItem, explanation_scores, m3cot_accuracy,
                                    parse_statistics, scienceqa_accuracy)
from clevr_poc.mcot.prompts import (SCIENCEQA_MAX_TOKENS, SCIENCEQA_STOP, build_m3cot_plan, build_scienceqa_prompt,
                                    normalize_m3cot_strategy, normalize_scienceqa_format, sample_demonstrations)
from clevr_poc.progress import progress_bar


#: How item images reach the model (module docstring).
IMAGE_MODES: tuple[str, ...] = ("none", "send", "caption")


def _check_images(images: str, *, benchmark: str) -> str:
    if images not in IMAGE_MODES or (images == "caption" and benchmark != "scienceqa"):
        allowed = IMAGE_MODES if benchmark == "scienceqa" else ("none", "send")
        raise FormatError(f"images must be one of {list(allowed)} for {benchmark}", field="images", value=images)
    return images


def _run_items(pending: Sequence[Any], work: Callable[[Any], Any], done: Callable[[Any, Any], None], *,
               workers: int, save: Callable[[], None] | None, save_every: int, progress: bool, desc: str) -> None:
    """``done(item, work(item))`` for every item in order, ``workers`` at a time; ``save()`` after every
    ``save_every`` items (rounded up to a multiple of ``workers``) and once more if a request fails."""
    if workers < 1 or save_every < 1:
        raise ValueError(f"workers and save_every must be >= 1, got {workers}, {save_every}")
    bar = progress_bar(len(pending), enabled=progress and bool(pending), description=desc, unit="q")
    chunk = max(save_every, workers) if workers > 1 else save_every
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    finished = 0
    try:
        for start in range(0, len(pending), chunk):
            part = list(pending[start:start + chunk])
            results = pool.map(work, part) if pool is not None else map(work, part)
            try:
                for item, result in zip(part, results):
                    done(item, result)
                    finished += 1
                    if bar is not None:
                        bar.update(1)
            finally:
                if save is not None and finished:
                    save()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()


# ----------------------------------------------------------------------------------------------------------
# ScienceQA
# ----------------------------------------------------------------------------------------------------------
def read_scienceqa_outputs(path: str | Path) -> dict[str, str]:
    """``{qid: output}`` from a ScienceQA result JSON ``{"outputs": {qid: text}, ...}``.

    Raises:
        FormatError: missing file, bad JSON, no ``outputs`` object or a non-string output.
    """
    data = read_json(path)
    outputs = data.get("outputs") if isinstance(data, Mapping) else None
    if not isinstance(outputs, Mapping):
        raise FormatError("expected an object with an 'outputs' map {qid: text}", source=path, field="outputs")
    for qid, text in outputs.items():
        if not isinstance(text, str):
            raise FormatError("an output must be a string", source=path, field=f"outputs.{qid}", value=text)
    return {str(k): v for k, v in outputs.items()}


def score_scienceqa(dataset: ScienceQADataset, outputs: Mapping[str, str], *,
                    mode: ExtractionMode | str = ExtractionMode.OFFICIAL,
                    policy: FailurePolicy | str = FailurePolicy.WRONG, seed: int = 3,
                    explanations: bool = False, similarity_model: Any | None = None,
                    name: str = "model", rng: random.Random | None = None,
                    ) -> tuple[dict[str, Any], list[ScoredItem], ExplanationScores | None]:
    """Score ScienceQA outputs.

    Random guesses (policy ``random``) come from ``rng`` (default ``random.Random(seed)``) in the order of
    ``outputs``; :func:`official_guess_rng` gives the generator state of the official runner.

    Returns:
        (summary, items, explanation scores or None). ``summary`` holds ``accuracy`` (Table 3 columns, each
        ``{"acc": percent, "correct", "total"}``), ``parse`` (failure count / rate, guesses, methods) and,
        with ``explanations``, ``explanations`` (BLEU-1/4, ROUGE-L, similarity).

    Raises:
        FormatError: an output id that is not in the data set.
    """
    mode, policy = ExtractionMode(mode), FailurePolicy(policy)
    rng = random.Random(seed) if rng is None else rng
    items: list[ScoredItem] = []
    for qid, text in outputs.items():
        if qid not in dataset:
            raise FormatError("output for an id that is not in the data set", source=dataset.source, field="id",
                              value=qid)
        problem = dataset[qid]
        extraction = extract_scienceqa(text, len(problem.choices), mode=mode, choices=problem.choices)
        resolved = resolve(extraction, len(problem.choices), policy, rng)
        items.append(ScoredItem(qid, problem.answer, resolved.index, resolved.parsed, resolved.guessed,
                                extraction.method))
    columns = scienceqa_accuracy(dataset.problems, items)
    parse = parse_statistics(items)
    scores = None
    summary: dict[str, Any] = {
        "dataset": "scienceqa", "name": name, "items": len(items), "rule": mode.value, "on_failure": policy.value,
        "seed": seed, "accuracy": {column: acc.to_json() for column, acc in columns.items()}, "parse": parse,
    }
    if explanations:
        scores = explanation_scores(dataset.problems, outputs, similarity_model=similarity_model)
        summary["explanations"] = scores.to_json()
    return summary, items, scores


def official_guess_rng(dataset: ScienceQADataset, shots: int, seed: int) -> random.Random:
    """``random.Random(seed)`` after drawing ``shots`` demonstrations from train: the state in which the
    official runner (``random.seed(seed)``, ``random.sample``, then ``random.choice`` per failure) guesses."""
    rng = random.Random(seed)
    sample_demonstrations(dataset.split_ids("train") if shots else (), shots, rng)
    return rng


@dataclass(frozen=True)
class ScienceQARunArgs:
    """The settings of a ScienceQA run (``args`` of the official result file)."""

    split: str
    prompt_format: str
    shot_number: int
    seed: int
    use_caption: bool
    max_tokens: int
    backend: str
    images: str

    def to_json(self) -> dict[str, str | int | bool]:
        return asdict(self)


@dataclass(frozen=True)
class ScienceQARun:
    """What :func:`run_scienceqa` returns, in the official result layout (:meth:`to_json`, module doc).

    Attributes:
        acc: accuracy in percent (official rule, random guess for unparseable outputs).
        correct, count: correct answers, problems answered.
        shot_qids: the demonstrations' problem ids.
        args: the run's settings.
        results: problem id -> predicted choice index (-1: none).
        outputs: problem id -> the model's output text.
        errors: problem id -> why its output is empty (a prompt too long).
    """

    acc: float
    correct: int
    count: int
    shot_qids: list[str]
    args: ScienceQARunArgs
    results: dict[str, int]
    outputs: dict[str, str]
    errors: dict[str, str]

    def to_json(self) -> dict[str, object]:
        return {"acc": self.acc, "correct": self.correct, "count": self.count, "shot_qids": self.shot_qids,
                "args": self.args.to_json(), "results": self.results, "outputs": self.outputs,
                "errors": self.errors}


def run_scienceqa(dataset: ScienceQADataset, backend: ChatBackend, *, split: str = "test",
                  prompt_format: str = "QCM-ALE", shots: int = 2, seed: int = 3, use_caption: bool = False,
                  limit: int | None = None, max_tokens: int = SCIENCEQA_MAX_TOKENS,
                  output_path: str | Path | None = None, save_every: int = 10, progress: bool = True,
                  on_output: Callable[[str, str], None] | None = None, images: str = "none",
                  workers: int = 1) -> ScienceQARun:
    """Prompt ``backend`` with every problem of ``split`` (card §Method) and collect its outputs.

    Demonstrations: ``random.Random(seed).sample(train ids, shots)`` (the official draw). Decoding: greedy,
    stop at a newline, ``max_tokens`` new tokens. With ``output_path`` the result file is written every
    ``save_every`` items and an existing one is resumed (it must have the same shots and format). A prompt
    that does not fit the model's context becomes an empty output (unparseable) and is listed in ``errors``.
    ``images``: ``none`` / ``send`` / ``caption`` (module docstring); ``workers``: parallel requests.

    Returns:
        :class:`ScienceQARun` (the official result layout, see the module docstring); ``results`` uses the
        official rule and a random guess for unparseable outputs drawn as the official runner does
        (:func:`official_guess_rng`).

    Raises:
        FormatError: an unknown split or format, an existing result file made with other settings, or
            (``images="send"``) a problem whose image file is not in the image folder.
        clevr_poc.llm.LLMBackendError: the backend failed (ImagesNotSupportedError: a text-only backend).
    """
    prompt_format = normalize_scienceqa_format(prompt_format)
    images = _check_images(images, benchmark="scienceqa")
    use_caption = use_caption or images == "caption"
    qids = list(dataset.split_ids(split))
    if limit is not None:
        qids = qids[:max(0, limit)]
    rng = random.Random(seed)
    shot_qids = sample_demonstrations(dataset.split_ids("train") if shots else (), shots, rng)
    args = ScienceQARunArgs(split, prompt_format, shots, seed, use_caption, max_tokens, backend.name or "?", images)
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    if output_path is not None and Path(output_path).exists():
        previous = read_json(output_path)
        before = previous.get("args", {}) if isinstance(previous, Mapping) else {}
        if not isinstance(previous, Mapping) or previous.get("shot_qids") != shot_qids or \
                before.get("prompt_format") != prompt_format or before.get("images", "none") != images:
            raise FormatError("existing result file was made with other demonstrations, another prompt format or "
                              "another image mode; remove it or choose another --output", source=output_path)
        outputs = dict(read_scienceqa_outputs(output_path))
        errors = {str(k): str(v) for k, v in (previous.get("errors") or {}).items()}

    def snapshot() -> ScienceQARun:
        done = {q: outputs[q] for q in qids if q in outputs}
        summary, items, _ = score_scienceqa(dataset, done, mode="official", policy="random", seed=seed,
                                            rng=official_guess_rng(dataset, shots, seed))
        correct = sum(i.correct for i in items)
        return ScienceQARun(100.0 * correct / len(items) if items else 0.0, correct, len(items), shot_qids, args,
                            {i.id: (-1 if i.predicted is None else i.predicted) for i in items}, done,
                            {q: errors[q] for q in qids if q in errors})

    pending = [q for q in qids if q not in outputs]
    if images == "send":  # every image is checked before the first request
        for qid in pending:
            _scienceqa_image(dataset, qid)

    def ask(qid: str) -> tuple[str, str | None]:
        prompt = build_scienceqa_prompt(dataset, shot_qids, qid, prompt_format, use_caption=use_caption)
        image = _scienceqa_image(dataset, qid) if images == "send" else None
        try:
            text = backend.complete([_user_turn(prompt, image)], max_tokens=max_tokens, temperature=0.0,
                                    stop=list(SCIENCEQA_STOP))
        except PromptTooLongError as exc:  # this item only: recorded as an empty (unparseable) output
            return "", str(exc)
        return text, None

    def done(qid: str, answer: tuple[str, str | None]) -> None:
        outputs[qid] = answer[0].strip()
        if answer[1] is not None:
            errors[qid] = answer[1]
        if on_output is not None:
            on_output(qid, outputs[qid])

    save = (lambda: atomic_write_json(output_path, snapshot().to_json(), indent=2)) if output_path is not None else None
    _run_items(pending, ask, done, workers=workers, save=save, save_every=save_every, progress=progress,
               desc=f"scienceqa {split}")
    result = snapshot()
    if output_path is not None:
        atomic_write_json(output_path, result.to_json(), indent=2)
    return result


def _scienceqa_image(dataset: ScienceQADataset, qid: str) -> Path | None:
    """The problem's image file (None when it has no image); FormatError when its file was not found."""
    problem = dataset[qid]
    if not problem.image:
        return None
    if problem.image_path is None:
        raise FormatError(f"image {problem.image!r} not found (expected <data>/images/{qid}/{problem.image} or "
                          f"images/<split>/{qid}/{problem.image})", source=dataset.source, field=f"{qid}.image",
                          value=problem.image)
    return problem.image_path


def _user_turn(text: str, image: Any) -> dict[str, Any]:
    """A user message: the text alone, or ``[image part, text part]``."""
    if image is None:
        return {"role": "user", "content": text}
    from clevr_poc.llm.images import user_message

    return user_message(text, [image])


# ----------------------------------------------------------------------------------------------------------
# M3CoT
# ----------------------------------------------------------------------------------------------------------
def experiment_record(record: M3CoTRecord, messages: Sequence[str], **extra: Any) -> dict[str, Any]:
    """One line of an M3CoT experiment file."""
    return {"id": record.id, "question": record.question, "choices": list(record.choices), "answer": record.answer,
            "domain": record.domain, "topic": record.topic, "messages": list(messages), **extra}


def _write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def run_m3cot(records: Sequence[M3CoTRecord], backend: ChatBackend, *, strategy: str = "direct",
              limit: int | None = None, max_tokens: int = 512, seed: int | None = None,
              output_path: str | Path | None = None, save_every: int = 10,
              progress: bool = True, images: str = "none", workers: int = 1) -> list[dict[str, Any]]:
    """Ask ``backend`` every record with one M3CoT strategy; ``images="send"`` attaches the record's image to
    the first user turn (``"none"``: text only); ``workers`` requests at a time.

    Multi-turn strategies feed each reply back before the next user turn; greedy decoding. With
    ``output_path`` the experiment file is rewritten every ``save_every`` items and resumed by id. A prompt
    that does not fit the model's context ends that conversation with an empty reply and an ``error`` field.

    Returns:
        Experiment records (see :func:`experiment_record`) in input order, with ``strategy`` and ``backend``.

    Raises:
        FormatError: unknown strategy, another strategy / image mode in an existing file, a record without an
            image (``images="send"``); clevr_poc.llm.LLMBackendError: the backend failed.
    """
    strategy = normalize_m3cot_strategy(strategy)
    images = _check_images(images, benchmark="m3cot")
    chosen = list(records)[: max(0, limit)] if limit is not None else list(records)
    done: dict[str, dict[str, Any]] = {}
    if output_path is not None and Path(output_path).exists():
        for number, line in enumerate(read_text(output_path, what="an experiment file").split("\n"), start=1):
            if not line.strip():
                continue
            row = loads_json(line, source=f"{output_path}, line {number}")  # every JSON failure: FormatError
            previous = parse_m3cot_record(row, source=f"{output_path}, line {number}", index=number,
                                          require_messages=True)
            if row.get("strategy", strategy) != strategy:
                raise FormatError("existing experiment file was made with another strategy; remove it or choose "
                                  "another --output", source=output_path, field="strategy", value=row["strategy"])
            if row.get("images", "none") != images:
                raise FormatError("existing experiment file was made with another image mode; remove it or choose "
                                  "another --output", source=output_path, field="images", value=row.get("images"))
            done[previous.id] = row
    name = backend.name or "?"

    def ordered() -> list[dict[str, Any]]:
        return [done[r.id] for r in chosen if r.id in done]

    pending = [r for r in chosen if r.id not in done]
    if images == "send":
        missing = [r.id for r in pending if r.image_source is None]
        if missing:
            raise FormatError(f"{len(missing)} record(s) have no image (no image bytes, no file found)",
                              field="image", value=missing[0])

    def ask(record: M3CoTRecord) -> tuple[list[str], dict[str, Any]]:
        plan = build_m3cot_plan(record, strategy)
        transcript: list[str] = []
        chat: list[dict[str, Any]] = []
        extra: dict[str, Any] = {}
        for number, turn in enumerate(plan.turns):
            image = record.image_source if images == "send" and number == 0 else None
            chat.append(_user_turn(turn, image))
            try:
                reply = backend.complete(chat, max_tokens=max_tokens, temperature=0.0, seed=seed)
            except PromptTooLongError as exc:  # this item only: an empty (unparseable) final reply
                transcript += [turn, ""]
                extra["error"] = str(exc)
                break
            chat.append({"role": "assistant", "content": reply})
            transcript += [turn, reply]
        return transcript, extra

    def finish(record: M3CoTRecord, answer: tuple[list[str], dict[str, Any]]) -> None:
        done[record.id] = experiment_record(record, answer[0], strategy=strategy, backend=name, images=images,
                                            **answer[1])

    save = (lambda: _write_jsonl(output_path, ordered())) if output_path is not None else None
    _run_items(pending, ask, finish, workers=workers, save=save, save_every=save_every, progress=progress,
               desc=f"m3cot {strategy}")
    result = ordered()
    if output_path is not None:
        _write_jsonl(output_path, result)
    return result


def score_m3cot(predictions: Sequence[M3CoTRecord], *, gold: Sequence[M3CoTRecord] | None = None,
                mode: ExtractionMode | str = ExtractionMode.OFFICIAL,
                policy: FailurePolicy | str = FailurePolicy.WRONG, seed: int = 0,
                name: str = "model") -> tuple[dict[str, Any], list[ScoredItem]]:
    """Score M3CoT experiment records (the model output is the last message).

    With ``gold`` (data records), answer, domain and topic come from the gold record of the same id and
    predictions without one are skipped, as the official ``MetricData.metric(map=...)`` does; gold records
    without a prediction are counted in ``missing`` (not scored). Random guesses (policy ``random``) come
    from ``random.Random(seed)`` in prediction order.

    Returns:
        (summary, items); ``summary["accuracy"]`` = ``{"total", "domains", "topics"}`` of
        ``{"acc": percent, "correct", "total"}``.

    Raises:
        FormatError: a prediction without messages.
    """
    mode, policy = ExtractionMode(mode), FailurePolicy(policy)
    rng = random.Random(seed)
    gold_by_id = {r.id: r for r in gold} if gold is not None else None
    scored_records: dict[str, M3CoTRecord] = {}
    items: list[ScoredItem] = []
    skipped = 0
    for prediction in predictions:
        if not prediction.messages:
            raise FormatError("record has no model output (messages is empty)", field="messages",
                              value=prediction.id)
        reference = prediction
        if gold_by_id is not None:
            if prediction.id not in gold_by_id:
                skipped += 1
                continue
            reference = gold_by_id[prediction.id]
        choices = prediction.choices or reference.choices
        extraction = extract_m3cot(prediction.messages[-1], choices, mode=mode)
        resolved = resolve(extraction, len(choices), policy, rng)
        scored_records[prediction.id] = reference
        items.append(ScoredItem(prediction.id, reference.answer_index, resolved.index, resolved.parsed,
                                resolved.guessed, extraction.method))
    accuracy = m3cot_accuracy(scored_records, items)
    summary = {
        "dataset": "m3cot", "name": name, "items": len(items), "rule": mode.value, "on_failure": policy.value,
        "seed": seed,
        "accuracy": {"total": accuracy["total"].to_json(),
                     "domains": {d: a.to_json() for d, a in accuracy["domains"].items()},
                     "topics": {d: {t: a.to_json() for t, a in topics.items()}
                                for d, topics in accuracy["topics"].items()}},
        "parse": parse_statistics(items),
        "skipped": skipped,
        "missing": 0 if gold_by_id is None else sum(1 for i in gold_by_id if i not in scored_records),
    }
    return summary, items
