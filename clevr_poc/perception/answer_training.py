"""Fine-tuning the attribute network from answers alone (NeurASP-style; issue #24, item 4).

Data: (image, environment, question, gold answer set) only; no scene labels (no boxes, attributes or
regions; the scene file is read for its camera only, the official camera when it has none). The detector
of the starting model is frozen: it runs once per image (:func:`load_answer_examples`), and its boxes and
scores stay fixed. Each training step, for each of ``batch`` questions:

1. the attribute network (as at inference: BatchNorm statistics frozen, no dropout, but with gradients)
   reads the detector's boxes: attribute log-probabilities and a centre offset, hence region
   log-probabilities (:func:`~clevr_poc.perception.answer_loss.region_log_probabilities`);
2. the ``k`` most probable scenes consistent with the environment are enumerated from those
   probabilities (:func:`~clevr_poc.perception.ranked_decoding.ranked_decode`, the decoder the
   probabilistic answers use);
3. the Reasoner answers the question's gold ASP query on each scene; a scene *matches* when its answer
   set equals the gold set;
4. the loss is NeurASP's ``-log sum_{matching i} p(s_i)`` over those k scenes
   (:func:`~clevr_poc.perception.answer_loss.semantic_loss`; the module doc there gives the equations and
   why the default does not renormalise). Questions where no scene among the k matches give no signal:
   they are skipped and counted (:class:`QuestionStatus`).

The batch loss is the mean over the questions that matched; a step where none matched changes nothing
(counted). AdamW, linear warm-up then cosine decay (:func:`~clevr_poc.perception.perception_training.learning_rate`),
gradient norm clipped to 10, as labelled training.

Files in the output folder (atomic writes): ``answers.pt`` (training state, every ``checkpoint_every``
steps and at the end; a run finds it and resumes, with the same settings) and, when finished,
``perception.pt``: the starting model with the new attribute weights (detector and ``position_sigma``
unchanged), its ``training`` metadata extended by ``answer_training`` (settings, data, counts, losses).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from clevr_poc import domain
from clevr_poc.camera import Camera
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.perception import box_geometry as geo
from clevr_poc.perception.answer_loss import region_log_probabilities, scene_log_probabilities, semantic_loss
from clevr_poc.perception.cameras import DEFAULT_CAMERA_SOURCE, check_camera_source, camera_spec, resolve_camera
from clevr_poc.perception.decoding import ObjectCandidate
from clevr_poc.perception.model_file import MODEL_FILE, read_model_file
from clevr_poc.perception.models import attribute_inputs, context_images
from clevr_poc.perception.perceiver import DEFAULT_CANDIDATE_THRESHOLD, Detection, Perception
from clevr_poc.perception.perception_training import (_batch_indices, _cpu, _optimizer_to, atomic_torch_save,
                                                      learning_rate, load_state)
from clevr_poc.perception.ranked_decoding import DEFAULT_K, DEFAULT_MAX_MODELS, DEFAULT_MIN_RATIO, ranked_decode

#: Most scenes per question (each is one Reasoner call per question and step).
MAX_K = 256
#: The state file of an answer-training run.
STATE_FILE = "answers.pt"


@dataclass(frozen=True)
class AnswerTrainConfig:
    """Settings of an answer-only run (stored in the checkpoint; a resumed run must use the same).

    Attributes:
        seed: seeds the order of the questions.
        steps: optimiser steps in all.
        batch: questions per step.
        lr: peak learning rate (fine-tuning: lower than from scratch).
        weight_decay: AdamW weight decay.
        warmup_steps: linear learning-rate warm-up.
        k: scenes enumerated per question (1..:data:`MAX_K`).
        min_ratio: scenes less than ``min_ratio`` times as probable as the MAP scene are not enumerated, in (0, 1].
        max_models: most scenes one enumeration collects (>= k).
        normalise: divide by the mass of the k scenes (the answer given image and environment) instead of
            NeurASP's unnormalised probability of the observation (:mod:`.answer_loss`).
        checkpoint_every: steps between checkpoints.
        decode_time_limit: seconds for each clingo solve call of the ranked decoder.

    Raises:
        FormatError: a setting out of its range.
    """

    seed: int = 0
    steps: int = 100
    batch: int = 8
    lr: float = 2e-4
    weight_decay: float = 1e-4
    warmup_steps: int = 10
    k: int = DEFAULT_K
    min_ratio: float = DEFAULT_MIN_RATIO
    max_models: int = DEFAULT_MAX_MODELS
    normalise: bool = False
    checkpoint_every: int = 50
    decode_time_limit: float = 10.0

    def __post_init__(self) -> None:
        checks = {"steps": self.steps >= 1, "batch": self.batch >= 1, "lr": self.lr > 0,
                  "weight_decay": self.weight_decay >= 0, "warmup_steps": self.warmup_steps >= 0,
                  "k": 1 <= self.k <= MAX_K, "min_ratio": 0.0 < self.min_ratio <= 1.0,
                  "max_models": self.max_models >= self.k, "checkpoint_every": self.checkpoint_every >= 1,
                  "decode_time_limit": self.decode_time_limit > 0}
        for name, ok in checks.items():
            if not ok:
                raise FormatError(f"answer training setting out of range (k: 1..{MAX_K}, max_models >= k, "
                                  "min_ratio in (0, 1], the rest positive)", field=name, value=getattr(self, name))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class QuestionStatus(StrEnum):
    """What one question gave in one step."""

    #: some scene among the k gives the gold answer: it contributed a loss
    MATCHED = "matched"
    #: consistent scenes were found, none gives the gold answer: skipped
    NO_MATCH = "no_match"
    #: no consistent scene (or the decoder ran out of time): skipped
    NO_SCENE = "no_scene"
    #: the detector found no box on the image: skipped (nothing to train)
    NO_DETECTION = "no_detection"


@dataclass(frozen=True)
class AnswerExample:
    """One question with its image's frozen detections (no scene labels).

    Attributes:
        image: uint8 (3, H, W).
        context: float (1, 3, context_height, context_width), the image downscaled for the network.
        camera: the image's camera, fitted to its size.
        boxes: float32 (D, 4) ``(x1, y1, x2, y2)`` pixels of the detections kept as candidates (score >=
            the candidate threshold, ground point below the horizon), by descending score.
        scores: float64 (D,) detection scores.
        geometry: float32 (D, 9) the network's geometric inputs (:func:`~clevr_poc.perception.box_geometry.box_features`).
        ground: float64 (D, 2) world ``(x, y)`` of each box's ground point.
        frame: float64 (2, 2) rows ``forward`` and ``right`` (:func:`~clevr_poc.perception.box_geometry.ground_frame`).
        environment: the question's environment.
        query: the gold ASP query (sanitized).
        answer: the gold answer set.
        image_index: the question's image index (for reports).
    """

    image: torch.Tensor
    context: torch.Tensor
    camera: Camera
    boxes: np.ndarray
    scores: np.ndarray
    geometry: np.ndarray
    ground: np.ndarray
    frame: np.ndarray
    environment: Environment
    query: Any
    answer: frozenset[str]
    image_index: int


@dataclass(frozen=True)
class QuestionOutcome:
    """One question in one step: its status, scenes found, the matching scenes' share of their mass
    (normalised over the k; 0 when none matched) and its loss (None when skipped)."""

    status: QuestionStatus
    scenes: int
    matched_mass: float
    loss: float | None


@dataclass(frozen=True)
class AnswerTrainingResult:
    """A finished (or stopped) run: ``model`` is ``out/perception.pt`` when finished, else None;
    ``counts`` per :class:`QuestionStatus` over the steps run (all runs of a resumed training);
    ``losses`` the mean loss of each checkpoint window; ``seconds`` wall time of the steps; ``solver_errors``
    scenes the Reasoner could not settle (counted as not matching)."""

    model: Path | None
    step: int
    counts: dict[str, int]
    losses: list[float]
    seconds: float
    solver_errors: int
    questions: int


# ---------------------------------------------------------------------- data
@torch.no_grad()
def detect_candidates(perception: Perception, array: np.ndarray, camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Boxes float32 (D, 4) and scores float64 (D,) of the detector's boxes with score >= the
    perception's candidate threshold whose ground point lies below the horizon (the candidates
    :meth:`Perception.decode_distribution` decodes), by descending score."""
    tensor = torch.from_numpy(array).to(perception.device).permute(2, 0, 1).float().div_(255.0)
    output = perception.detector([tensor])[0]
    keep = output["scores"] >= perception.candidate_threshold
    boxes, scores = output["boxes"][keep].cpu().numpy(), output["scores"][keep].cpu().numpy()
    usable = []
    for i, box in enumerate(boxes):
        try:
            geo.ground_point(box.tolist(), camera)
        except ValueError:
            continue
        usable.append(i)
    return boxes[usable].astype(np.float32).reshape(-1, 4), scores[usable].astype(np.float64)


def load_answer_examples(perception: Perception, dataset: str | os.PathLike[str], split: str = "train", *,
                         skip: int = 0, limit: int | None = None, camera_source: str = DEFAULT_CAMERA_SOURCE,
                         progress: bool = False) -> list[AnswerExample]:
    """The labelled questions of ``split`` with a rendered image, in image-index order, less the first
    ``skip``, at most ``limit``; the detector runs once on each image.

    Raises:
        FormatError: not a dataset folder, no such split, no rendered labelled question left, a query
            outside the query language, or a bad camera.
    """
    from tqdm import tqdm

    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.image_files import read_rgb
    from clevr_poc.reasoning import Reasoner

    camera_source = check_camera_source(camera_source)
    data = load_dataset(dataset, split=split)
    chosen = sorted((e for e in data if e.image_path is not None and e.answer), key=lambda e: e.image_index or 0)
    chosen = chosen[skip:] if limit is None else chosen[skip:skip + limit]
    if not chosen:
        raise FormatError(f"no rendered, labelled question in split {split!r} after skipping {skip}", source=dataset,
                          field="split", value=split)
    reasoner = Reasoner()
    out = []
    for example in tqdm(chosen, desc="detecting", disable=not progress, unit="image"):
        array = read_rgb(example.image_path)
        spec = camera_spec(example.partial_scene, camera_source, source=example.scene_path or example.image_path)
        camera = resolve_camera(array.shape[1], array.shape[0], camera=spec)
        boxes, scores = detect_candidates(perception, array, camera)
        image = torch.from_numpy(array).permute(2, 0, 1).contiguous()
        context = context_images(image[None].float() / 255.0, perception.config)
        geometry = np.stack([geo.box_features(b.tolist(), camera) for b in boxes]).astype(np.float32) \
            if len(boxes) else np.zeros((0, 9), np.float32)
        ground = np.array([geo.ground_point(b.tolist(), camera) for b in boxes], dtype=np.float64).reshape(-1, 2)
        out.append(AnswerExample(image, context, camera, boxes, scores, geometry, ground,
                                 np.stack(geo.ground_frame(camera)), example.environment,
                                 reasoner.sanitize(example.question.asp_query), frozenset(example.answer),
                                 int(example.image_index or 0)))
    return out


# ---------------------------------------------------------------------- one step
def network_outputs(perception: Perception, examples: Sequence[AnswerExample]) -> list[dict[str, torch.Tensor]]:
    """The attribute network's outputs on the boxes of ``examples`` (one forward pass, with gradients),
    split per example: attribute -> (D, |domain|) logits and ``offset`` (D, 2)."""
    device = perception.device
    sizes = [len(e.boxes) for e in examples]
    present = [i for i, n in enumerate(sizes) if n]
    empty = {a: torch.zeros((0, len(domain.DOMAINS[a])), device=device) for a in domain.ATTRIBUTES}
    empty["offset"] = torch.zeros((0, 2), device=device)
    if not present:
        return [dict(empty) for _ in examples]
    images = [examples[i].image.to(device).float() / 255.0 for i in present]
    contexts = torch.cat([examples[i].context for i in present]).to(device)
    index = torch.cat([torch.full((sizes[i],), j, dtype=torch.long) for j, i in enumerate(present)]).to(device)
    boxes = torch.from_numpy(np.concatenate([examples[i].boxes for i in present])).to(device)
    geometry = torch.from_numpy(np.concatenate([examples[i].geometry for i in present])).to(device)
    crops, context = attribute_inputs(images, contexts, index, boxes, perception.config)
    outputs = perception.attributes(crops, context, geometry)
    split = {k: torch.split(v, [sizes[i] for i in present]) for k, v in outputs.items()}
    result = []
    j = 0
    for n in sizes:
        if n:
            result.append({k: split[k][j] for k in split})
            j += 1
        else:
            result.append(dict(empty))
    return result


def question_loss(perception: Perception, example: AnswerExample, outputs: dict[str, torch.Tensor], reasoner: Any,
                  config: AnswerTrainConfig) -> tuple[torch.Tensor | None, QuestionOutcome, int]:
    """The semantic loss of one question (module doc, steps 2-4) from the network's ``outputs`` on its
    boxes; returns ``(loss or None, outcome, scenes the Reasoner could not settle)``."""
    if len(example.boxes) == 0:
        return None, QuestionOutcome(QuestionStatus.NO_DETECTION, 0, 0.0, None), 0
    log_probs = {a: torch.log_softmax(outputs[a].float(), dim=1) for a in domain.ATTRIBUTES}
    frame = torch.as_tensor(example.frame, dtype=torch.float32, device=outputs["offset"].device)
    centres = torch.as_tensor(example.ground, dtype=torch.float32, device=frame.device) + outputs["offset"] @ frame
    region_log = region_log_probabilities(centres, perception.position_sigma)
    detections = []
    for d in range(len(example.boxes)):
        probabilities = {a: tuple(float(p) for p in log_probs[a][d].detach().exp().cpu()) for a in domain.ATTRIBUTES}
        position = tuple(float(v) for v in centres[d].detach().cpu())
        candidate = ObjectCandidate(float(example.scores[d]), probabilities,
                                    tuple(float(p) for p in region_log[d].detach().exp().cpu()), position)
        detections.append(Detection(tuple(float(v) for v in example.boxes[d]), candidate,
                                    tuple(float(v) for v in outputs["offset"][d].detach().cpu())))
    ranked = ranked_decode([d.candidate for d in detections], example.environment, k=config.k,
                           min_ratio=config.min_ratio, max_models=config.max_models,
                           time_limit=config.decode_time_limit)
    if not ranked.scenes:
        return None, QuestionOutcome(QuestionStatus.NO_SCENE, 0, 0.0, None), 0
    matches, errors = [], 0
    for decoded in ranked.scenes:
        scene = perception._scene(detections, decoded, example.camera, example.environment)
        try:
            matches.append(reasoner.answer(example.environment, scene, example.query).values == example.answer)
        except ClevrPocError:          # a solver time-out on a strange scene: it does not match
            matches.append(False)
            errors += 1
    scene_log = scene_log_probabilities(log_probs, region_log,
                                        torch.as_tensor(example.scores, device=frame.device), ranked.scenes)
    loss = semantic_loss(scene_log, matches, normalise=config.normalise)
    mass = float(sum(p for p, m in zip(ranked.probabilities, matches) if m))
    if loss is None:
        return None, QuestionOutcome(QuestionStatus.NO_MATCH, len(matches), 0.0, None), errors
    return loss, QuestionOutcome(QuestionStatus.MATCHED, len(matches), mass, float(loss.detach())), errors


# ---------------------------------------------------------------------- the run
def _fresh_state() -> dict[str, Any]:
    return {"step": 0, "losses": [], "seconds": 0.0, "counts": {s.value: 0 for s in QuestionStatus},
            "solver_errors": 0, "skipped_steps": 0, "matched_mass": []}


def train_answers(init: str | os.PathLike[str], dataset: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  split: str = "train", skip: int = 0, limit: int | None = None,
                  config: AnswerTrainConfig = AnswerTrainConfig(), camera_source: str = DEFAULT_CAMERA_SOURCE,
                  progress: bool = True, log: Callable[[str], None] = print, stop_after: int | None = None,
                  device: str | torch.device = "cpu", examples: Sequence[AnswerExample] | None = None
                  ) -> AnswerTrainingResult:
    """Fine-tune the attribute network of the model ``init`` from the answers of ``split`` of ``dataset``
    (module doc); resumes from ``out/answers.pt``; writes ``out/perception.pt`` when ``config.steps``
    are done. ``skip``/``limit``: which questions (:func:`load_answer_examples`); ``examples``: already
    loaded ones (then ``dataset``, ``split``, ``skip``, ``limit`` are only recorded). ``stop_after``: at
    most this many steps now.

    Raises:
        FormatError: an unreadable model, no usable question, or a checkpoint written with other settings.
        DeviceError: a device this machine does not have.
    """
    from tqdm import tqdm

    from clevr_poc.reasoning import Reasoner

    out = Path(out)
    path = out / STATE_FILE
    perception = Perception.from_pretrained(init, device=device)
    net = perception.attributes
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    data_info = {"init": str(init), "dataset": str(dataset), "split": split, "skip": skip, "limit": limit,
                 "camera_source": str(check_camera_source(camera_source))}
    state = load_state(path)
    if state is None:
        state = _fresh_state()
    else:
        if state.get("train_config") != config.to_json() or state.get("data") != data_info:
            raise FormatError("the checkpoint was written with other settings; use another --out or the same "
                              "settings", source=path, field="train_config")
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        _optimizer_to(optimizer, perception.device)
        log(f"answers: resuming at step {state['step']} / {config.steps}")
    if examples is None:
        examples = load_answer_examples(perception, dataset, split, skip=skip, limit=limit,
                                        camera_source=camera_source, progress=progress)
    log(f"{len(examples)} questions, {sum(len(e.boxes) for e in examples)} candidate boxes (answers only)")
    out.mkdir(parents=True, exist_ok=True)   # only once the data is read: a bad dataset leaves no folder behind
    reasoner = Reasoner()
    net.eval()                 # as at inference: frozen BatchNorm statistics, no dropout; gradients still flow
    for p in perception.detector.parameters():
        p.requires_grad_(False)
    step = state["step"]
    last = config.steps if stop_after is None else min(config.steps, step + stop_after)
    bar = tqdm(total=config.steps, initial=step, desc="answers", disable=not progress, unit="step")
    start, window = time.perf_counter(), []
    while step < last:
        chosen = [examples[i] for i in _batch_indices(step, config.batch, len(examples), config.seed)]
        outputs = network_outputs(perception, chosen)
        losses = []
        for example, output in zip(chosen, outputs):
            loss, outcome, errors = question_loss(perception, example, output, reasoner, config)
            state["counts"][outcome.status.value] += 1
            state["solver_errors"] += errors
            if loss is not None:
                losses.append(loss)
                state["matched_mass"].append(round(outcome.matched_mass, 6))
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config.steps, config.lr, config.warmup_steps)
        if losses:
            total = torch.stack(losses).mean()
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            nn.utils.clip_grad_norm_(net.parameters(), 10.0)
            optimizer.step()
            window.append(float(total.detach()))
        else:
            state["skipped_steps"] += 1
        step += 1
        bar.update(1)
        if window:
            bar.set_postfix(loss=f"{np.mean(window[-20:]):.3f}")
        if step % config.checkpoint_every == 0 or step == last:
            state.update(step=step, model=_cpu(net.state_dict()), optimizer=optimizer.state_dict(),
                         train_config=config.to_json(), data=data_info,
                         seconds=state["seconds"] + time.perf_counter() - start)
            state["losses"].append(float(np.mean(window)) if window else math.nan)
            window, start = [], time.perf_counter()
            atomic_torch_save(state, path)
    bar.close()
    model = _export(init, out, state, config, data_info) if state["step"] >= config.steps else None
    return AnswerTrainingResult(model, state["step"], dict(state["counts"]), list(state["losses"]), state["seconds"],
                                state["solver_errors"], len(examples))


def _export(init: str | os.PathLike[str], out: Path, state: dict[str, Any], config: AnswerTrainConfig,
            data_info: dict[str, Any]) -> Path:
    """``out/perception.pt``: the model ``init`` with the trained attribute weights and the run's metadata."""
    model = read_model_file(init)
    model["attributes"] = state["model"]
    training = dict(model.get("training") or {})
    training["answer_training"] = {"train_config": config.to_json(), "data": data_info, "steps": state["step"],
                                   "seconds": state["seconds"], "counts": state["counts"],
                                   "solver_errors": state["solver_errors"], "skipped_steps": state["skipped_steps"],
                                   "losses": state["losses"], "torch": str(torch.__version__)}
    model["training"] = training
    path = out / MODEL_FILE
    atomic_torch_save(model, path)
    return path


__all__ = ["AnswerExample", "AnswerTrainConfig", "AnswerTrainingResult", "MAX_K", "QuestionOutcome", "QuestionStatus",
           "STATE_FILE", "detect_candidates", "load_answer_examples", "network_outputs", "question_loss",
           "train_answers"]
