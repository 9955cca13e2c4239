"""Training the CLIP baseline's classifier on cached features, its checkpoint folder, and the trained
model as an evaluator model (``predict_batch`` / ``predict`` / ``predict_detailed``).

Checkpoint folder (written by :func:`train`, read by :meth:`CLIPBaseline.from_checkpoint`)::

    DIR/config.json    {"kind": "clevr_poc.clip_baseline", "variant", "encoders", "head", "train", ...}
    DIR/head.pt        the classifier's state_dict (torch.save; the selected epoch)
    DIR/history.json   per-epoch training loss and validation loss / exact accuracy / Jaccard
    DIR/features/      the default feature cache (see :mod:`clevr_poc.baselines.clip.features`)

Training (defaults follow the official code: Adam, lr 1e-3, batch 8, dropout 0.1, threshold 0.5): the
frozen encoders' features are computed once (cached), then each epoch is a pass over the cached
training features. With a validation split, the epoch with the best validation Jaccard index (ties:
the earlier epoch) is kept (``select="best"``); otherwise (or with ``select="last"``) the last epoch.
Feature extraction resumes from the cache after an interruption; the epochs themselves are cheap and
are simply rerun.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
import torch

from clevr_poc import domain
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.baselines.clip.encoders import EncoderSpec, FrozenEncoders
from clevr_poc.baselines.clip.features import (
    VARIANT_NAMES, FeatureArrays, FeatureExtractor, _atomic_write_bytes, check_variant, encoders_match,
)
from clevr_poc.baselines.clip.model import (
    DEFAULT_BETA, DEFAULT_THRESHOLD, RESTRICTIONS, WEIGHTINGS, MultiLabelHead, decode, weighted_bce,
)
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.metrics import exact_match, jaccard_index
from clevr_poc.evaluation.report import Prediction

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example

CHECKPOINT_KIND = "clevr_poc.clip_baseline"
CHECKPOINT_VERSION = 1
SELECTIONS: tuple[str, ...] = ("best", "last")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of the classifier (the encoders are frozen and set by :class:`EncoderSpec`).

    Attributes:
        variant: ``"nl"`` (constraints in English), ``"asp"`` (constraints as ASP) or ``"none"``.
        epochs: passes over the training set (official: 200 on 12,000 questions).
        batch_size: examples per step (official: 8).
        lr: Adam learning rate (official: 1e-3).
        dropout: dropout probability (official: 0.1).
        hidden: hidden layer widths of the head; ``()`` = the official single linear layer.
        beta: weight of eq. 1 (see :mod:`clevr_poc.baselines.clip.model`).
        weighting: ``"positives"`` (eq. 1) or ``"negatives"`` (official code).
        threshold: decision threshold on probabilities (official: 0.5).
        restrict: ``"none"`` (all 17 labels, the paper's model) or ``"attribute"`` (queried attribute only).
        seed: seed of the head's initialisation and the batch order.
        select: ``"best"`` (best validation Jaccard) or ``"last"`` epoch.
    """

    variant: str = "nl"
    epochs: int = 50
    batch_size: int = 8
    lr: float = 1e-3
    dropout: float = 0.1
    hidden: tuple[int, ...] = (512,)
    beta: float = DEFAULT_BETA
    weighting: str = "positives"
    threshold: float = DEFAULT_THRESHOLD
    restrict: str = "none"
    seed: int = 0
    select: str = "best"

    def __post_init__(self) -> None:
        check_variant(self.variant)
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        checks = [
            ("epochs", self.epochs >= 1, "must be >= 1"), ("batch_size", self.batch_size >= 1, "must be >= 1"),
            ("lr", self.lr > 0, "must be > 0"), ("dropout", 0 <= self.dropout < 1, "must be in [0, 1)"),
            ("hidden", all(h >= 1 for h in self.hidden), "widths must be >= 1"),
            ("beta", self.beta > 0, "must be > 0"), ("weighting", self.weighting in WEIGHTINGS, f"must be one of {WEIGHTINGS}"),
            ("threshold", 0 < self.threshold < 1, "must be in (0, 1)"),
            ("restrict", self.restrict in RESTRICTIONS, f"must be one of {RESTRICTIONS}"),
            ("select", self.select in SELECTIONS, f"must be one of {SELECTIONS}"),
        ]
        for name, ok, message in checks:
            if not ok:
                raise FormatError(message, field=name, value=getattr(self, name))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["hidden"] = list(self.hidden)
        return data

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "TrainConfig":
        if not isinstance(data, dict):
            raise FormatError("must be a JSON object", source=source, field="train")
        known = {f for f in cls.__dataclass_fields__}
        try:
            return cls(**{k: (tuple(v) if k == "hidden" else v) for k, v in data.items() if k in known})
        except TypeError as exc:
            raise FormatError(f"bad training settings ({exc})", source=source, field="train") from None


@dataclass(frozen=True)
class EpochRecord:
    """One epoch: mean training loss, and validation loss / exact accuracy / Jaccard (None without a
    validation split)."""

    epoch: int
    train_loss: float
    val_loss: float | None = None
    val_exact_accuracy: float | None = None
    val_jaccard: float | None = None


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` did.

    Attributes:
        checkpoint: the checkpoint folder.
        history: one :class:`EpochRecord` per epoch.
        selected_epoch: the epoch whose head was saved (1-based).
        train_examples, val_examples: examples used.
        seconds: wall time of feature extraction and of the epochs.
    """

    checkpoint: Path
    history: tuple[EpochRecord, ...]
    selected_epoch: int
    train_examples: int
    val_examples: int
    seconds: dict[str, float] = field(default_factory=dict)


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when available, else ``"cpu"``; anything else unchanged."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _scores(probabilities: np.ndarray, features: FeatureArrays, threshold: float, restrict: str) -> tuple[float, float]:
    predicted = decode(probabilities, threshold=threshold, restrict=restrict, attributes=features.attributes)
    golds = [frozenset(domain.LABELS[j] for j in np.flatnonzero(row)) for row in features.targets]
    if not golds:
        return 0.0, 0.0
    exact = sum(exact_match(g, p) for g, p in zip(golds, predicted)) / len(golds)
    jac = sum(jaccard_index(g, p) for g, p in zip(golds, predicted)) / len(golds)
    return float(exact), float(jac)


@contextlib.contextmanager
def _head_threads() -> Iterator[None]:
    """One intra-op thread while training/running the small head: its matrices are tiny, and several
    OpenMP threads on busy shared cores made each step ~20x slower (measured: 3 s vs 0.15 s per epoch of
    60 examples on 2 loaded cores). The frozen encoders keep torch's default."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _logits(head: MultiLabelHead, inputs: np.ndarray, device: str) -> torch.Tensor:
    head.eval()
    with torch.inference_mode(), _head_threads():
        return head(torch.from_numpy(inputs).to(device)).float().cpu()


def _probabilities(head: MultiLabelHead, inputs: np.ndarray, device: str) -> np.ndarray:
    return torch.sigmoid(_logits(head, inputs, device)).numpy()


def train(train_examples: Sequence[Any], out_dir: str | os.PathLike[str], config: TrainConfig,
          encoders: EncoderSpec, *, val_examples: Sequence[Any] | None = None,
          cache_dir: str | os.PathLike[str] | None = None, allow_missing_images: bool = False,
          device: str = "auto", progress: bool = False, log: Callable[[str], None] | None = None,
          frozen: FrozenEncoders | None = None) -> TrainResult:
    """Train the classifier of one CLIP variant and write its checkpoint folder.

    Args:
        train_examples: labelled examples (:class:`clevr_poc.dataset_reader.Example`).
        out_dir: checkpoint folder (created; existing files are replaced).
        config: hyper-parameters (its ``variant`` picks the constraint input).
        encoders: the frozen encoders (``gpt2`` is ignored for variant ``none``).
        val_examples: labelled validation examples (epoch selection), or None.
        cache_dir: feature cache folder (default ``out_dir/features``).
        allow_missing_images: use a placeholder for unrendered images instead of raising.
        device: torch device, or ``"auto"``.
        progress: progress bar while encoding.
        log: called with one line per epoch (default: nothing).
        frozen: already-built encoders to reuse (same CLIP, and same GPT-2 unless variant ``none``).

    Returns:
        :class:`TrainResult`.

    Raises:
        FormatError: no training examples, an example without a gold answer, bad settings.
        MissingImageError: an unrendered image (without ``allow_missing_images``).
        PretrainedModelError: encoder weights missing.
    """
    train_examples = list(train_examples)
    val_examples = list(val_examples or [])
    if not train_examples:
        raise FormatError("no training examples", field="train_examples")
    for example in (*train_examples, *val_examples):
        if example.question.answer is None:
            raise FormatError("a training/validation question has no gold answer", field="answer",
                              value=example.question.image_filename)
    if config.variant == "none":
        encoders = replace(encoders, gpt2=None)
    device = resolve_device(device)
    out = Path(out_dir)
    cache = Path(cache_dir) if cache_dir is not None else out / "features"
    extractor = FeatureExtractor(encoders, config.variant, cache, allow_missing_images=allow_missing_images,
                                 device=device, encoders=frozen)
    started = time.perf_counter()
    train_features = extractor.features(train_examples, progress=progress)
    val_features = extractor.features(val_examples, progress=progress) if val_examples else None
    extractor.flush()
    encode_seconds = time.perf_counter() - started

    generator = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)
    inputs = torch.from_numpy(train_features.inputs())
    targets = torch.from_numpy(train_features.targets.astype(np.float32))
    head = MultiLabelHead(inputs.shape[1], config.hidden, config.dropout).to(device)
    optimizer = torch.optim.Adam(head.parameters(), lr=config.lr)
    val_inputs = val_features.inputs() if val_features is not None else None
    started = time.perf_counter()
    with _head_threads():
        history, best_state, selected = _epochs(head, optimizer, inputs, targets, val_features, val_inputs, config,
                                                generator, device, log)
    if best_state is not None:
        head.load_state_dict(best_state)
    train_seconds = time.perf_counter() - started
    result = TrainResult(out, tuple(history), selected, len(train_examples), len(val_examples),
                         {"features": round(encode_seconds, 3), "epochs": round(train_seconds, 3)})
    save_checkpoint(out, head, config, encoders, result, cache_dir=cache, computed=dict(extractor.computed))
    return result


def _epochs(head: MultiLabelHead, optimizer: Any, inputs: torch.Tensor, targets: torch.Tensor,
            val_features: FeatureArrays | None, val_inputs: np.ndarray | None, config: TrainConfig,
            generator: torch.Generator, device: str, log: Callable[[str], None] | None,
            ) -> tuple[list[EpochRecord], dict[str, torch.Tensor] | None, int]:
    """The training epochs: (history, state of the selected epoch or None for the last, selected epoch)."""
    history: list[EpochRecord] = []
    best_state, best_key, selected = None, None, config.epochs
    for epoch in range(1, config.epochs + 1):
        head.train()
        order = torch.randperm(len(inputs), generator=generator)
        total, count = 0.0, 0
        for start in range(0, len(order), config.batch_size):
            index = order[start:start + config.batch_size]
            logits = head(inputs[index].to(device))
            loss = weighted_bce(logits, targets[index].to(device), beta=config.beta, weighting=config.weighting)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
            count += len(index)
        record = EpochRecord(epoch, total / count)
        if val_features is not None and val_inputs is not None:
            logits = _logits(head, val_inputs, device)
            val_loss = float(weighted_bce(logits, torch.from_numpy(val_features.targets), beta=config.beta,
                                          weighting=config.weighting))
            probs = torch.sigmoid(logits).numpy()
            exact, jac = _scores(probs, val_features, config.threshold, config.restrict)
            record = EpochRecord(epoch, record.train_loss, val_loss, exact, jac)
            key = (jac, exact)
            if config.select == "best" and (best_key is None or key > best_key):
                best_key, selected = key, epoch
                best_state = {k: v.detach().clone() for k, v in head.state_dict().items()}
        history.append(record)
        if log is not None:
            log(_epoch_line(record, config.epochs))
    return history, best_state, selected


def _epoch_line(record: EpochRecord, epochs: int) -> str:
    line = f"epoch {record.epoch}/{epochs}: train loss {record.train_loss:.4f}"
    if record.val_loss is not None:
        line += (f", val loss {record.val_loss:.4f}, val exact {record.val_exact_accuracy:.4f}, "
                 f"val Jaccard {record.val_jaccard:.4f}")
    return line


def save_checkpoint(out: Path, head: MultiLabelHead, config: TrainConfig, encoders: EncoderSpec,
                    result: TrainResult, *, cache_dir: Path, computed: dict[str, int]) -> None:
    """Write ``config.json``, ``head.pt`` and ``history.json`` atomically (``head.pt`` first)."""
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in head.state_dict().items()}, buffer)
    _atomic_write_bytes(out / "head.pt", buffer.getvalue())
    atomic_write_json(out / "history.json", [asdict(r) for r in result.history], indent=1)
    try:
        cache_ref = str(cache_dir.resolve().relative_to(out.resolve()))
    except ValueError:
        cache_ref = str(cache_dir.resolve())
    atomic_write_json(out / "config.json", {
        "kind": CHECKPOINT_KIND, "version": CHECKPOINT_VERSION, "variant": config.variant,
        "name": VARIANT_NAMES[config.variant], "labels": list(domain.LABELS),
        "encoders": encoders.to_json(),
        "head": {"input_dim": head.input_dim, "hidden": list(head.hidden), "dropout": head.dropout},
        "train": config.to_json(), "selected_epoch": result.selected_epoch,
        "train_examples": result.train_examples, "val_examples": result.val_examples,
        "seconds": result.seconds, "features_computed": computed, "feature_cache": cache_ref,
        "torch": torch.__version__,
    }, indent=1)


# ---------------------------------------------------------------------------- the trained model
class CLIPBaseline:
    """A trained CLIP baseline (paper §4.1.1) with the evaluator's model protocol.

    Build it with :meth:`from_checkpoint`. ``predict_batch(examples)`` returns one
    :class:`~clevr_poc.evaluation.Prediction` per example (values: a frozenset of labels; ``raw``: the 17
    probabilities as JSON). It never returns a parse failure: an empty set is a valid (wrong) answer.

    Attributes:
        name: model name in reports (``"CLIP-NL"``, ``"CLIP-ASP"``, ``"CLIP (no knowledge)"``).
        variant, threshold, restrict: see :class:`TrainConfig`.
    """

    def __init__(self, head: MultiLabelHead, extractor: FeatureExtractor, *, threshold: float, restrict: str,
                 name: str, device: str = "cpu", config: dict[str, Any] | None = None) -> None:
        if not 0 < threshold < 1:
            raise FormatError("must be in (0, 1)", field="threshold", value=threshold)
        if restrict not in RESTRICTIONS:
            raise FormatError(f"must be one of {RESTRICTIONS}", field="restrict", value=restrict)
        self.head = head.to(device).eval()
        self.extractor = extractor
        self.variant = extractor.variant
        self.threshold = threshold
        self.restrict = restrict
        self.name = name
        self.device = device
        self.config = config or {}

    def __repr__(self) -> str:
        return f"CLIPBaseline(name={self.name!r}, threshold={self.threshold}, restrict={self.restrict!r})"

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str], *, threshold: float | None = None,
                        restrict: str | None = None, allow_missing_images: bool = False,
                        cache_dir: str | os.PathLike[str] | None = None, device: str = "auto",
                        name: str | None = None, variant: str | None = None,
                        frozen: FrozenEncoders | None = None) -> "CLIPBaseline":
        """Load a checkpoint folder written by :func:`train`.

        Args:
            path: the checkpoint folder.
            threshold, restrict: override the trained settings.
            allow_missing_images: placeholder for unrendered images instead of :class:`MissingImageError`.
            cache_dir: feature cache (default: the one recorded in the checkpoint, ``path/features``).
            device: torch device or ``"auto"``.
            name: model name in reports (default: the variant's Table-2 name).
            variant: if given, the checkpoint's variant must be this one.
            frozen: already-built encoders to reuse (their spec must match the checkpoint's).

        Raises:
            FormatError: not a checkpoint folder, a damaged file, or another variant than ``variant``.
        """
        folder = Path(path)
        config_file = folder / "config.json"
        if not folder.is_dir() or not config_file.is_file():
            raise FormatError("not a CLIP baseline checkpoint folder (no config.json); train one with "
                              "`python -m clevr_poc.baselines.clip train`", source=folder)
        config = read_json(config_file)
        if not isinstance(config, dict) or config.get("kind") != CHECKPOINT_KIND:
            raise FormatError(f"not a CLIP baseline checkpoint (kind != {CHECKPOINT_KIND!r})", source=config_file,
                              field="kind", value=config.get("kind") if isinstance(config, dict) else None)
        if config.get("labels") != list(domain.LABELS):
            raise FormatError("label order differs from clevr_poc.domain.LABELS", source=config_file, field="labels")
        found = config.get("variant")
        check_variant(str(found))
        if variant is not None and found != variant:
            raise FormatError(f"the checkpoint is of variant {found!r}, not {variant!r}", source=config_file,
                              field="variant", value=found)
        settings = TrainConfig.from_json(config.get("train"), source=config_file)
        spec = EncoderSpec.from_json(config.get("encoders"), source=config_file)
        head_cfg = config.get("head") or {}
        try:
            head = MultiLabelHead(int(head_cfg["input_dim"]), tuple(head_cfg["hidden"]), float(head_cfg["dropout"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"bad head description ({exc})", source=config_file, field="head") from None
        weights = folder / "head.pt"
        try:
            state = torch.load(weights, map_location="cpu", weights_only=True)
            head.load_state_dict(state)
        except FileNotFoundError:
            raise FormatError("file not found", source=weights) from None
        except (RuntimeError, OSError, ValueError, KeyError) as exc:
            raise FormatError(f"cannot load the classifier weights ({exc.__class__.__name__})", source=weights) from None
        device = resolve_device(device)
        if cache_dir is None:
            ref = Path(str(config.get("feature_cache", "features")))
            cache_dir = ref if ref.is_absolute() else folder / ref
        extractor = FeatureExtractor(spec, str(found), cache_dir, allow_missing_images=allow_missing_images,
                                     device=device,
                                     encoders=frozen if frozen is not None and encoders_match(frozen.spec, spec, str(found)) else None)
        return cls(head, extractor, threshold=settings.threshold if threshold is None else threshold,
                   restrict=settings.restrict if restrict is None else restrict,
                   name=name or str(config.get("name") or VARIANT_NAMES[str(found)]), device=device, config=config)

    # ------------------------------------------------------------------ model protocol
    def probabilities(self, examples: Sequence[Any], *, progress: bool = False) -> tuple[np.ndarray, FeatureArrays]:
        """``(n, 17)`` float32 sigmoid outputs (columns :data:`clevr_poc.domain.LABELS`) and the features."""
        features = self.extractor.features(list(examples), progress=progress)
        inputs = features.inputs()
        if inputs.shape[1] != self.head.input_dim:
            raise FormatError(f"feature width {inputs.shape[1]} differs from the classifier's {self.head.input_dim}",
                              field="features")
        return _probabilities(self.head, inputs, self.device), features

    def predict_batch(self, examples: Sequence["Example"]) -> list[Prediction]:
        """One :class:`Prediction` per example (see the class docstring)."""
        examples = list(examples)
        if not examples:
            return []
        probs, features = self.probabilities(examples)
        answers = decode(probs, threshold=self.threshold, restrict=self.restrict, attributes=features.attributes)
        return [Prediction(answer, None, json.dumps({label: round(float(p), 4) for label, p in zip(domain.LABELS, row)}))
                for answer, row in zip(answers, probs)]

    def predict_detailed(self, example: "Example") -> Prediction:
        return self.predict_batch([example])[0]

    def predict(self, example: "Example") -> frozenset[str]:
        """The predicted answer set (a frozenset of labels; may be empty)."""
        values = self.predict_detailed(example).values
        assert values is not None
        return values
