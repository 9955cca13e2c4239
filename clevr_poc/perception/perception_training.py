"""Training the detector and the attribute network on rendered CLEVR-POC images (resumable).

Both networks train from scratch (no pre-trained weights can be downloaded) with AdamW, a linear
warm-up and a cosine decay, on the images of one split (``incomplete`` and, when rendered, ``complete``
scenes: complete images carry one more object each). Batches are a deterministic function of the seed
and the step (a fresh permutation per epoch, augmentation drawn from ``(seed, step)``), so a run
resumed from a checkpoint continues exactly where it stopped.

Files in the output folder (every write atomic: temp file + rename):

* ``detector.pt``, ``attributes.pt``: training states (weights, optimiser, step, losses), written every
  ``checkpoint_every`` steps and at the end; a run finds them and resumes;
* ``perception.pt``: the finished model (weights of both networks, :class:`ModelConfig`, the position
  error ``position_sigma`` and training metadata), written when both parts are done; load it with
  :meth:`clevr_poc.perception.Perception.from_pretrained`.

The two parts are independent (the attribute network trains on ground-truth boxes, jittered), so two
processes can train them at once (``--part detector`` / ``--part attributes``), one core each.

Images of different sizes mix freely (320 x 240, 320 x 320, 480 x 320: the detector never resizes, the
attribute network sees fixed-size crops). ``TrainConfig.init`` names a finished ``perception.pt`` to
start both networks from (fine-tuning; its :class:`ModelConfig` is used). Training runs on ``device``
(``"auto"``: CUDA when present, else CPU; :mod:`clevr_poc.perception.devices`).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.image_files import read_rgb
from clevr_poc.perception import box_geometry as geo
from clevr_poc.perception.rendered_truth import RenderedImage, load_rendered
from clevr_poc.perception.model_file import MODEL_FORMAT, read_model_file
from clevr_poc.perception.models import (
    AttributeNet,
    ModelConfig,
    attribute_inputs,
    build_detector,
    context_images,
)

PARTS: tuple[str, ...] = ("detector", "attributes")


@dataclass(frozen=True)
class TrainConfig:
    """Settings of a training run (stored in the checkpoints; a resumed run must use the same).

    Attributes:
        seed: seeds initialisation, batch order and augmentation.
        detector_steps, detector_batch, detector_lr: detector optimisation (images per step).
        attribute_steps, attribute_batch, attribute_lr: attribute network optimisation (objects per step).
        weight_decay: AdamW weight decay (both).
        warmup_steps: linear learning-rate warm-up (both).
        box_jitter: the attribute network sees ground-truth boxes with each side moved by up to this
            fraction of the box size (detector boxes are not exact).
        checkpoint_every: steps between checkpoints.
        kinds: scene kinds used (``incomplete``, ``complete``).
        init: a finished model file (``perception.pt``) whose weights both networks start from
            (fine-tuning), or None (from scratch).
        exposure_jitter: photometric augmentation of both networks: every image is multiplied by
            ``2 ** U(-e, e)`` (a change of exposure, which keeps hues; 0 = off) ...
        gamma_jitter: ... and raised to the power ``2 ** U(-g, g)`` (another tone curve), then clipped to
            [0, 1]. Renders of one scene differ this way between styles and colour handling (the official
            look is far darker than ours), so a model that must read unknown looks sees both.
    """

    seed: int = 0
    detector_steps: int = 1000
    detector_batch: int = 4
    detector_lr: float = 2e-3
    attribute_steps: int = 1500
    attribute_batch: int = 64
    attribute_lr: float = 2e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 100
    box_jitter: float = 0.08
    checkpoint_every: int = 100
    kinds: tuple[str, ...] = ("incomplete", "complete")
    init: str | None = None
    exposure_jitter: float = 0.0
    gamma_jitter: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass
class TrainingData:
    """Images of one split in memory.

    Attributes:
        records: the :class:`RenderedImage` records.
        images: N uint8 tensors (3, H_i, W_i), each at its own size.
        contexts: float (N, 3, context_height, context_width).
    """

    records: list[RenderedImage]
    images: list[torch.Tensor]
    contexts: torch.Tensor

    @classmethod
    def load(cls, dataset: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], split: str | Sequence[str],
             config: ModelConfig, kinds: Sequence[str] = ("incomplete", "complete"),
             limit: int | None = None) -> "TrainingData":
        """Read every rendered image of ``split`` (one split name or several) of ``dataset`` (one dataset
        folder or several; images of every (dataset, split) pair are pooled, pairs without rendered
        images are skipped; ``limit`` applies per dataset, split and kind).

        Only images whose scene has boxes are used (:attr:`RenderedImage.annotated`).

        Raises:
            FormatError: no rendered image at all, or an image whose size differs from its camera's.
        """
        datasets = [dataset] if isinstance(dataset, (str, os.PathLike)) else list(dataset)
        splits = [split] if isinstance(split, str) else list(split)
        for folder in datasets:
            if not Path(folder).is_dir():
                raise FormatError("dataset folder not found", source=folder)
        records = []
        for folder in datasets:
            for name in splits:
                try:
                    found = load_rendered(folder, name, kinds=kinds, limit=limit)
                except FormatError as error:
                    if len(datasets) * len(splits) == 1 or error.field != "split":
                        raise
                    continue  # a split this dataset does not have
                records.extend(r for r in found if r.objects and r.annotated)
        if not records:
            raise FormatError(f"no rendered image with visible objects in split(s) {splits} "
                              "(render it first: python -m clevr_poc render)",
                              source=", ".join(str(d) for d in datasets), field="split", value=split)
        images = []
        for r in records:
            array = read_rgb(r.image_path)
            if array.shape[:2] != (r.camera.height, r.camera.width):
                raise FormatError(f"image is {array.shape[1]}x{array.shape[0]}, its camera "
                                  f"{r.camera.width}x{r.camera.height}", source=r.image_path)
            images.append(torch.from_numpy(array).permute(2, 0, 1).contiguous())
        contexts = torch.cat([context_images(image[None].float() / 255.0, config) for image in images])
        return cls(records, images, contexts)

    @property
    def num_objects(self) -> int:
        return sum(len(r.objects) for r in self.records)


# ---------------------------------------------------------------------- helpers
def learning_rate(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps to ``peak``, then cosine decay to ``peak / 20`` at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


def _batch_indices(step: int, batch: int, n: int, seed: int) -> list[int]:
    """Indices of the ``step``-th batch: consecutive slices of a per-epoch permutation of ``range(n)``."""
    out = []
    for position in range(step * batch, (step + 1) * batch):
        epoch, offset = divmod(position, n)
        generator = torch.Generator().manual_seed(seed * 100_003 + epoch)
        out.append(int(torch.randperm(n, generator=generator)[offset]))
    return out


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temp file in the same folder, fsync, then rename (:func:`clevr_poc._io.atomic_open`)."""
    from clevr_poc._io import atomic_open

    with atomic_open(path) as handle:
        torch.save(obj, handle)


def load_state(path: Path) -> dict[str, Any] | None:
    """A training state written by this module, or None when the file does not exist.

    Raises:
        FormatError: the file is not such a state.
    """
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt files
        raise FormatError(f"not a readable training checkpoint ({exc.__class__.__name__})", source=path) from None
    if not isinstance(state, dict) or "step" not in state or "model" not in state:
        raise FormatError("not a training checkpoint of clevr_poc.perception", source=path)
    return state


def _resume(path: Path, module: torch.nn.Module, optimizer: torch.optim.Optimizer, train: TrainConfig,
            model_config: ModelConfig, *, part: str, total: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The training state of one part: loaded from its checkpoint ``path`` into ``module`` and
    ``optimizer`` (after checking the settings match), or a fresh one at step 0.

    Raises:
        FormatError: the checkpoint was written with other settings.
    """
    state = load_state(path)
    if state is None:
        if train.init is not None:
            module.load_state_dict(_initial_weights(train.init, part))
            log(f"{part}: starting from the weights of {train.init}")
        return {"step": 0, "losses": [], "seconds": 0.0}
    _check_resume(state, train, model_config, path)
    module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    log(f"{part}: resuming at step {state['step']} / {total}")
    return state


def _initial_weights(init: str, part: str) -> dict[str, torch.Tensor]:
    data = read_model_file(init)
    key = "detector" if part == "detector" else "attributes"
    if key not in data:
        raise FormatError(f"the model file has no {key} weights", source=init, field=key)
    return {k: v.float() for k, v in data[key].items()}


def _check_resume(state: dict[str, Any], train: TrainConfig, model: ModelConfig, path: Path) -> None:
    for key, expected in (("train_config", train.to_json()), ("model_config", model.to_json())):
        if state.get(key) != expected:
            raise FormatError(f"the checkpoint was written with other settings ({key}); use another --out or "
                              "the same settings", source=path, field=key)


def photometric(image: torch.Tensor, exposure: float, gamma: float) -> torch.Tensor:
    """``clip(image ** 2**gamma * 2**exposure, 0, 1)`` of a float image in [0, 1] (:class:`TrainConfig`)."""
    if exposure == 0.0 and gamma == 0.0:
        return image
    return (image.clamp(min=0.0) ** (2.0 ** gamma) * (2.0 ** exposure)).clamp_(0.0, 1.0)


def _photometric_draw(train: TrainConfig, u: tuple[float, float]) -> tuple[float, float]:
    """Exposure and gamma (log2) from two uniform [0, 1) numbers."""
    return (train.exposure_jitter * (2 * u[0] - 1), train.gamma_jitter * (2 * u[1] - 1))


def _cpu(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A state dict with every tensor on the CPU (checkpoints load anywhere)."""
    return {k: v.detach().cpu() for k, v in state.items()}


def _optimizer_to(optimizer: torch.optim.Optimizer, device: Any) -> None:
    """Move a (resumed) optimizer's state tensors to ``device``, beside its parameters."""
    for per_param in optimizer.state.values():
        for key, value in per_param.items():
            if isinstance(value, torch.Tensor) and key != "step":
                per_param[key] = value.to(device)


@dataclass
class _TrainingLoop:
    """The bookkeeping both parts' training loops share: one part's module and optimiser, the step it is at,
    the step this run stops at (``last``), the progress bar, the wall time (seconds) and the losses since
    the last checkpoint.

    The loop draws no random numbers, so a resumed run stays exactly reproducible (each part seeds its
    own draws from ``(seed, step)``).
    """

    module: nn.Module
    optimizer: torch.optim.Optimizer
    step: int
    last: int
    bar: Any
    seconds0: float
    start: float = field(default_factory=time.perf_counter)
    running: list[float] = field(default_factory=list)

    @classmethod
    def begin(cls, module: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any], *, total: int,
              stop_after: int | None, desc: str, progress: bool, device: Any) -> "_TrainingLoop":
        """Put ``module`` and ``optimizer`` on ``device`` in training mode and start at ``state["step"]``
        (a state of :func:`_resume`); ``stop_after`` steps at most now, ``total`` in all."""
        from tqdm import tqdm

        module.to(device).train()
        _optimizer_to(optimizer, device)
        step = state["step"]
        bar = tqdm(total=total, initial=step, desc=desc, disable=not progress, unit="step")
        last = total if stop_after is None else min(total, step + stop_after)
        return cls(module, optimizer, step, last, bar, state["seconds"])

    def optimise(self, loss: torch.Tensor, lr: float) -> None:
        """One AdamW step on ``loss`` at learning rate ``lr`` (gradient norm clipped to 10), then count it."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.module.parameters(), 10.0)
        self.optimizer.step()
        self.step += 1
        self.running.append(float(loss.detach()))
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{np.mean(self.running[-20:]):.3f}")

    def checkpoint_due(self, every: int) -> bool:
        """Whether a checkpoint is written now: every ``every`` steps and at the run's last step."""
        return self.step % every == 0 or self.step == self.last

    def checkpoint(self, previous: dict[str, Any], train: TrainConfig, model_config: ModelConfig,
                   **extra: Any) -> dict[str, Any]:
        """The training state now (weights on the CPU, the mean loss since the last checkpoint appended to
        ``previous["losses"]``, ``extra`` entries last); starts a fresh loss window."""
        state = {"step": self.step, "model": _cpu(self.module.state_dict()), "optimizer": self.optimizer.state_dict(),
                 "losses": previous["losses"] + [float(np.mean(self.running))],
                 "seconds": self.seconds0 + time.perf_counter() - self.start,
                 "train_config": train.to_json(), "model_config": model_config.to_json(), **extra}
        self.running = []
        return state


# ---------------------------------------------------------------------- detector
def _detector_batch(data: TrainingData, indices: list[int], generator: torch.Generator, device: Any = "cpu",
                    train: TrainConfig | None = None) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    images, targets = [], []
    for i in indices:
        image = data.images[i].to(device).float() / 255.0
        if train is not None and (train.exposure_jitter or train.gamma_jitter):
            image = photometric(image, *_photometric_draw(train, tuple(torch.rand(2, generator=generator).tolist())))
        boxes = torch.tensor([o.box for o in data.records[i].objects], dtype=torch.float32, device=device)
        if torch.rand((), generator=generator) < 0.5:  # horizontal flip (boxes only: no labels here)
            image = image.flip(-1)
            width = image.shape[-1]
            boxes = torch.stack([width - boxes[:, 2], boxes[:, 1], width - boxes[:, 0], boxes[:, 3]], dim=1)
        images.append(image)
        targets.append({"boxes": boxes, "labels": torch.ones(len(boxes), dtype=torch.int64, device=device)})
    return images, targets


def train_detector(data: TrainingData, out: Path, train: TrainConfig, model_config: ModelConfig, *,
                   progress: bool = True, log: Callable[[str], None] = print, stop_after: int | None = None,
                   device: Any = "cpu") -> dict[str, Any]:
    """Train (or resume training) the detector; returns the last state (also in ``out/detector.pt``).

    ``stop_after``: train at most this many steps now (a checkpoint is written; run again to go on).
    ``device``: a torch device (:func:`clevr_poc.perception.devices.resolve_device`).
    """
    path = out / "detector.pt"
    torch.manual_seed(train.seed)
    detector = build_detector(model_config)
    optimizer = torch.optim.AdamW(detector.parameters(), lr=train.detector_lr, weight_decay=train.weight_decay)
    state = _resume(path, detector, optimizer, train, model_config, part="detector", total=train.detector_steps,
                    log=log)
    loop = _TrainingLoop.begin(detector, optimizer, state, total=train.detector_steps, stop_after=stop_after,
                               desc="detector", progress=progress, device=device)
    while loop.step < loop.last:
        step = loop.step
        torch.manual_seed(train.seed * 1_000_003 + step)   # proposal sampling: the same after a resume
        generator = torch.Generator().manual_seed(train.seed * 7919 + step)
        images, targets = _detector_batch(data, _batch_indices(step, train.detector_batch, len(data.records),
                                                               train.seed), generator, device, train)
        lr = learning_rate(step, train.detector_steps, train.detector_lr, train.warmup_steps)
        loss = sum(detector(images, targets).values())
        loop.optimise(loss, lr)
        if loop.checkpoint_due(train.checkpoint_every):
            state = loop.checkpoint(state, train, model_config, images=len(data.records))
            atomic_torch_save(state, path)
    loop.bar.close()
    return state


# ---------------------------------------------------------------------- attribute network
@dataclass
class _ObjectIndex:
    image: np.ndarray     # int64 (M,)
    boxes: np.ndarray     # float32 (M, 4)
    labels: np.ndarray    # int64 (M, 4), attribute order of domain.ATTRIBUTES
    centres: np.ndarray   # float64 (M, 2)
    sizes: np.ndarray     # float64 (M, 2): width, height of the object's image


def _object_index(data: TrainingData) -> _ObjectIndex:
    image, boxes, labels, centres, sizes = [], [], [], [], []
    for i, record in enumerate(data.records):
        for o in record.objects:
            image.append(i)
            boxes.append(o.box)
            labels.append([o.label(a) for a in domain.ATTRIBUTES])
            centres.append(o.centre)
            sizes.append((record.camera.width, record.camera.height))
    return _ObjectIndex(np.asarray(image, dtype=np.int64), np.asarray(boxes, dtype=np.float32),
                        np.asarray(labels, dtype=np.int64), np.asarray(centres, dtype=np.float64),
                        np.asarray(sizes, dtype=np.float64).reshape(-1, 2))


def attribute_batch(data: TrainingData, image_index: np.ndarray, boxes: np.ndarray, centres: np.ndarray | None,
                    config: ModelConfig, device: Any = "cpu", photometric_draws: np.ndarray | None = None
                    ) -> dict[str, torch.Tensor]:
    """Network inputs (and the offset targets when ``centres`` is given) for boxes of training images,
    on ``device``; ``photometric_draws``: (exposure, gamma) per distinct image of ``image_index`` (sorted),
    or None (no photometric augmentation)."""
    unique, local = np.unique(image_index, return_inverse=True)
    images = [data.images[int(i)].to(device).float() / 255.0 for i in unique]
    if photometric_draws is None:
        contexts = data.contexts[torch.from_numpy(unique)].to(device)
    else:
        images = [photometric(image, float(e), float(g)) for image, (e, g) in zip(images, photometric_draws)]
        contexts = torch.cat([context_images(image[None], config) for image in images])
    box_tensor = torch.from_numpy(np.asarray(boxes, dtype=np.float32)).to(device)
    crops, context = attribute_inputs(images, contexts, torch.from_numpy(local).to(device), box_tensor, config)
    cameras = [data.records[i].camera for i in image_index]
    features = torch.from_numpy(np.stack([geo.box_features(b, c) for b, c in zip(boxes, cameras)])).to(device)
    batch = {"crops": crops, "contexts": context, "geometry": features}
    if centres is not None:
        offsets = []
        for b, c, centre in zip(boxes, cameras, centres):
            try:
                gx, gy = geo.ground_point(b, c)
                offsets.append(geo.world_to_offset((centre[0] - gx, centre[1] - gy), c))
            except ValueError:
                offsets.append((0.0, 0.0))
        batch["offset"] = torch.tensor(offsets, dtype=torch.float32, device=device)
    return batch


def _jitter(boxes: np.ndarray, amount: float, rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
    """Boxes (M, 4) with each side moved by up to ``amount`` of the box size, clipped to their images
    (``sizes``: (M, 2) width, height)."""
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    scale = np.stack([w, h, w, h], axis=1)
    out = boxes + rng.uniform(-amount, amount, size=boxes.shape) * scale
    width, height = sizes[:, 0:1], sizes[:, 1:2]
    out[:, [0, 2]] = out[:, [0, 2]].clip(0, width)
    out[:, [1, 3]] = out[:, [1, 3]].clip(0, height)
    out[:, 2] = np.maximum(out[:, 2], out[:, 0] + 2)
    out[:, 3] = np.maximum(out[:, 3], out[:, 1] + 2)
    return out.astype(np.float32)


def attribute_loss(outputs: dict[str, torch.Tensor], labels: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Sum of the four cross-entropies and the smooth-L1 offset loss (world units, beta 0.2)."""
    loss = sum(nn.functional.cross_entropy(outputs[a], labels[:, k]) for k, a in enumerate(domain.ATTRIBUTES))
    return loss + nn.functional.smooth_l1_loss(outputs["offset"], offsets, beta=0.2)


def train_attributes(data: TrainingData, out: Path, train: TrainConfig, model_config: ModelConfig, *,
                     progress: bool = True, log: Callable[[str], None] = print, stop_after: int | None = None,
                     device: Any = "cpu") -> dict[str, Any]:
    """Train (or resume training) the attribute network; returns the last state (``out/attributes.pt``).

    ``stop_after``: train at most this many steps now (a checkpoint is written; run again to go on).
    ``device``: a torch device (:func:`clevr_poc.perception.devices.resolve_device`).

    At the end, ``position_sigma`` (world units) is the RMS error per axis of the predicted centres on
    the training objects (boxes jittered as in training), used for region probabilities.
    """
    path = out / "attributes.pt"
    torch.manual_seed(train.seed + 1)
    net = AttributeNet(model_config)
    optimizer = torch.optim.AdamW(net.parameters(), lr=train.attribute_lr, weight_decay=train.weight_decay)
    state = _resume(path, net, optimizer, train, model_config, part="attributes", total=train.attribute_steps,
                    log=log)
    index = _object_index(data)
    n = len(index.image)
    loop = _TrainingLoop.begin(net, optimizer, state, total=train.attribute_steps, stop_after=stop_after,
                               desc="attributes", progress=progress, device=device)
    while loop.step < loop.last:
        step = loop.step
        torch.manual_seed(train.seed * 1_000_003 + step)   # dropout: the same after a resume
        rng = np.random.default_rng([train.seed, step])
        chosen = np.asarray(_batch_indices(step, train.attribute_batch, n, train.seed + 1))
        boxes = _jitter(index.boxes[chosen], train.box_jitter, rng, index.sizes[chosen])
        draws = None
        if train.exposure_jitter or train.gamma_jitter:
            u = rng.uniform(size=(len(np.unique(index.image[chosen])), 2))
            draws = np.array([_photometric_draw(train, (a, b)) for a, b in u])
        batch = attribute_batch(data, index.image[chosen], boxes, index.centres[chosen], model_config, device, draws)
        lr = learning_rate(step, train.attribute_steps, train.attribute_lr, train.warmup_steps)
        outputs = net(batch["crops"], batch["contexts"], batch["geometry"])
        loop.optimise(attribute_loss(outputs, torch.from_numpy(index.labels[chosen]).to(device), batch["offset"]), lr)
        if loop.checkpoint_due(train.checkpoint_every):
            state = loop.checkpoint(state, train, model_config, objects=n, position_sigma=state.get("position_sigma"))
            if loop.step == train.attribute_steps:
                state["position_sigma"] = _position_sigma(net, data, index, train, model_config, device)
            atomic_torch_save(state, path)
    loop.bar.close()
    return state


@torch.no_grad()
def _position_sigma(net: AttributeNet, data: TrainingData, index: _ObjectIndex, train: TrainConfig,
                    config: ModelConfig, device: Any = "cpu") -> float:
    net.eval()
    rng = np.random.default_rng([train.seed, 2**31])
    errors = []
    for s in range(0, len(index.image), 256):
        chosen = np.arange(s, min(s + 256, len(index.image)))
        boxes = _jitter(index.boxes[chosen], train.box_jitter / 2, rng, index.sizes[chosen])
        batch = attribute_batch(data, index.image[chosen], boxes, index.centres[chosen], config, device)
        predicted = net(batch["crops"], batch["contexts"], batch["geometry"])["offset"]
        errors.append((predicted - batch["offset"]).cpu().numpy())
    net.train()
    return float(np.sqrt(np.mean(np.concatenate(errors) ** 2)))


# ---------------------------------------------------------------------- the whole run
def export_model(out: Path, model_config: ModelConfig, train: TrainConfig, *, dataset: str, split: str,
                 detector_state: dict[str, Any], attribute_state: dict[str, Any], device_name: str = "cpu") -> Path:
    """Write ``out/perception.pt`` (weights of both networks + metadata) from finished training states."""
    model = {
        "format": MODEL_FORMAT,
        "model_config": model_config.to_json(),
        "detector": detector_state["model"],
        "attributes": attribute_state["model"],
        "position_sigma": float(attribute_state.get("position_sigma") or 0.3),
        "training": {"train_config": train.to_json(), "dataset": str(dataset), "split": split,
                     "detector_seconds": detector_state["seconds"], "attribute_seconds": attribute_state["seconds"],
                     "images": detector_state.get("images"), "objects": attribute_state.get("objects"),
                     "detector_losses": detector_state["losses"], "attribute_losses": attribute_state["losses"],
                     "torch": str(torch.__version__), "device": device_name},
    }
    path = out / "perception.pt"
    atomic_torch_save(model, path)
    return path


def train(dataset: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
          split: str | Sequence[str] = "train",
          train_config: TrainConfig = TrainConfig(), model_config: ModelConfig = ModelConfig(),
          parts: Sequence[str] = PARTS, progress: bool = True, limit: int | None = None,
          stop_after: int | None = None, log: Callable[[str], None] = print, device: Any = "auto") -> Path | None:
    """Train the parts named in ``parts`` (resuming from ``out``), then export ``out/perception.pt`` when
    both parts are finished; returns its path, or None while a part is unfinished. ``dataset`` and
    ``split`` may name several folders / splits, pooled (:meth:`TrainingData.load`). With
    ``train_config.init``, both networks start from that model's weights and its :class:`ModelConfig`
    replaces ``model_config``. ``device``: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ...

    Raises:
        FormatError: no rendered images, an unreadable ``init`` model, or checkpoints written with other
            settings.
        DeviceError: a device this machine does not have.
    """
    from clevr_poc.perception.devices import resolve_device

    device = resolve_device(device)
    if train_config.init is not None:
        model_config = ModelConfig.from_json(read_model_file(train_config.init)["model_config"])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise FormatError(f"unknown part; expected some of {list(PARTS)}", field="part", value=unknown)
    data = TrainingData.load(dataset, split, model_config, kinds=train_config.kinds, limit=limit)
    log(f"{len(data.records)} images, {data.num_objects} visible objects ({split}, {list(train_config.kinds)})")
    dataset = dataset if isinstance(dataset, (str, os.PathLike)) else ",".join(str(d) for d in dataset)
    split = split if isinstance(split, str) else ",".join(split)
    states: dict[str, dict[str, Any] | None] = {}
    if "detector" in parts:
        states["detector"] = train_detector(data, out, train_config, model_config, progress=progress, log=log,
                                            stop_after=stop_after, device=device)
    if "attributes" in parts:
        states["attributes"] = train_attributes(data, out, train_config, model_config, progress=progress, log=log,
                                                stop_after=stop_after, device=device)
    for part, steps in (("detector", train_config.detector_steps), ("attributes", train_config.attribute_steps)):
        state = states.get(part) or load_state(out / f"{part}.pt")
        states[part] = state if state is not None and state["step"] >= steps else None
    if states["detector"] is None or states["attributes"] is None:
        return None
    return export_model(out, model_config, train_config, dataset=str(dataset), split=split,
                        detector_state=states["detector"], attribute_state=states["attributes"],
                        device_name=str(device))
