"""Inputs of the CLIP baseline and their cached embeddings (the encoders are frozen, so each image,
question and environment is encoded once and reused by every epoch and by evaluation).

Inputs of one example (paper §4.1.1, Fig. 3):

- the partial scene's image, ``incomplete/images/<split>/<image_filename>`` (:attr:`Example.image_path`);
  a missing image raises :class:`MissingImageError` unless ``allow_missing_images``, which uses a
  blank mid-gray 320x240 placeholder (:data:`PLACEHOLDER_SIZE`, :data:`PLACEHOLDER_RGB`) instead;
- the question text;
- the environment's constraints as sentences (:func:`constraint_sentences`): English for ``nl``
  (:meth:`Environment.describe`, one sentence per constraint after the object count), ASP for
  ``asp`` (``object(0..N-1).`` then :meth:`Environment.constraints_asp`, one rule per line), nothing
  for ``none``.

Cache layout (``cache_dir``)::

    cache_dir/clip-<hash>/spec.json          encoder identity and weight digest
    cache_dir/clip-<hash>/image.npz          keys (sha1 of the image file bytes, or "placeholder"), vectors
    cache_dir/clip-<hash>/question.npz       keys (sha1 of the question text), vectors
    cache_dir/gpt2-<hash>/spec.json
    cache_dir/gpt2-<hash>/constraint.npz     keys (sha1 of variant + sentences), vectors

``<hash>`` is :func:`identity_hash` of the encoder identity (model, weights, seed of random weights), so
different encoders never share vectors. Files are written atomically (temp file + rename) every
``flush_every`` new vectors and at :meth:`FeatureExtractor.flush`: an interrupted run keeps what it
computed and resumes from there.
"""

from __future__ import annotations

import hashlib
import io
import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from clevr_poc._io import atomic_write_bytes, atomic_write_json, read_json
from clevr_poc.baselines.clip.encoders import EncoderSpec, FrozenEncoders, identity_hash
from clevr_poc.baselines.clip.clip_errors import MissingImageError
from clevr_poc.image_files import open_image, read_image_bytes, rgb_pixels
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.metrics import to_multi_hot
from clevr_poc.progress import progress_bar

#: The three ways of giving the constraints (paper Table 2: CLIP-NL, CLIP-ASP, CLIP (no knowledge)).
VARIANTS: tuple[str, ...] = ("nl", "asp", "none")
#: Model names of the variants in reports (Table 2 column headers).
VARIANT_NAMES: dict[str, str] = {"nl": "CLIP-NL", "asp": "CLIP-ASP", "none": "CLIP (no knowledge)"}
#: Size (width, height) and colour of the placeholder used for missing images (``allow_missing_images``).
PLACEHOLDER_SIZE: tuple[int, int] = (320, 240)
PLACEHOLDER_RGB: tuple[int, int, int] = (128, 128, 128)
PLACEHOLDER_KEY = "placeholder"


def check_variant(variant: str) -> str:
    """Return ``variant`` if it is one of :data:`VARIANTS`; raises :class:`FormatError` otherwise."""
    if variant not in VARIANTS:
        raise FormatError(f"must be one of {VARIANTS}", field="variant", value=variant)
    return variant


def constraint_sentences(environment: Any, variant: str) -> list[str]:
    """The constraint sentences given to GPT-2 (see the module docstring); ``[]`` for ``none``."""
    check_variant(variant)
    if variant == "none":
        return []
    if variant == "nl":
        text = environment.describe()
    else:
        text = environment.to_asp(background=False, show=False)
    return [line.strip() for line in text.splitlines() if line.strip()]


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)  # temp file, fsync, rename, the umask's mode (clevr_poc._io)


class VectorStore:
    """Key -> float32 vector, kept in one ``.npz`` file (arrays ``keys`` (n,) str and ``vectors`` (n, d)).

    Raises:
        FormatError: the file exists but is not such an archive, or vectors of another width are added.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._vectors: dict[str, np.ndarray] = {}
        self.pending = 0
        if self.path.is_file():
            try:
                with np.load(self.path, allow_pickle=False) as archive:
                    keys, vectors = archive["keys"], archive["vectors"]
            except (OSError, ValueError, KeyError) as exc:
                raise FormatError(f"not a feature cache file ({exc.__class__.__name__}); delete it to recompute",
                                  source=self.path) from None
            if vectors.ndim != 2 or len(keys) != len(vectors):
                raise FormatError("keys and vectors do not match; delete the file to recompute", source=self.path)
            self._vectors = {str(k): v.astype(np.float32) for k, v in zip(keys, vectors)}

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, key: str) -> bool:
        return key in self._vectors

    def get(self, key: str) -> np.ndarray | None:
        return self._vectors.get(key)

    def put(self, key: str, vector: np.ndarray) -> None:
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._vectors:
            width = next(iter(self._vectors.values())).shape[0]
            if vector.shape[0] != width:
                raise FormatError(f"vector width {vector.shape[0]} differs from the cache's {width}", source=self.path)
        if key not in self._vectors:
            self.pending += 1
        self._vectors[key] = vector

    def flush(self) -> None:
        """Write the file atomically (only if something was added)."""
        if not self.pending:
            return
        keys = list(self._vectors)
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(keys, dtype=str), vectors=np.stack([self._vectors[k] for k in keys]))
        _atomic_write_bytes(self.path, buffer.getvalue())
        self.pending = 0


@dataclass(frozen=True)
class FeatureArrays:
    """Embeddings of n examples, rows in example order.

    Attributes:
        image: ``(n, D_clip)`` float32 image embeddings.
        question: ``(n, D_clip)`` float32 question embeddings.
        constraints: ``(n, D_gpt2)`` float32 constraint embeddings, or None (variant ``none``).
        targets: ``(n, 17)`` bool multi-hot gold answers (columns :data:`clevr_poc.domain.LABELS`); all
            False for unlabelled examples.
        attributes: the queried attribute of each example (or None).
    """

    image: np.ndarray
    question: np.ndarray
    constraints: np.ndarray | None
    targets: np.ndarray
    attributes: tuple[str | None, ...]

    def __len__(self) -> int:
        return self.image.shape[0]

    def inputs(self) -> np.ndarray:
        """The classifier input: ``[image | question | constraints]`` concatenated, ``(n, D)`` float32
        (Fig. 3; the official code concatenates text, image, constraints — order is immaterial)."""
        parts = [self.image, self.question] + ([self.constraints] if self.constraints is not None else [])
        return np.concatenate(parts, axis=1).astype(np.float32)


def encoders_match(built: EncoderSpec, wanted: EncoderSpec, variant: str) -> bool:
    """Whether encoders built for ``built`` compute the features of ``wanted`` for ``variant`` (same CLIP;
    same GPT-2 unless the variant has no constraints)."""
    if built.clip_identity() != wanted.clip_identity():
        return False
    return variant == "none" or built.gpt2_identity() == wanted.gpt2_identity()


class FeatureExtractor:
    """Cached embeddings of examples for one variant and one set of encoders.

    Args:
        spec: the encoders (built only when a vector is missing from the cache).
        variant: ``"nl"``, ``"asp"`` or ``"none"``.
        cache_dir: the cache folder (module docstring).
        allow_missing_images: use the placeholder for an unrendered image instead of raising.
        device: torch device of the encoders.
        batch_size: images/texts per forward pass.
        flush_every: write the cache files after this many new vectors.
        encoders: reuse already-built encoders (must match ``spec``).

    Raises:
        FormatError: unknown variant, a damaged cache, or a cache made by encoders with other weights.
    """

    def __init__(self, spec: EncoderSpec, variant: str, cache_dir: str | os.PathLike[str], *,
                 allow_missing_images: bool = False, device: str = "cpu", batch_size: int = 32,
                 flush_every: int = 256, encoders: FrozenEncoders | None = None) -> None:
        self.spec = spec
        self.variant = check_variant(variant)
        if variant != "none" and spec.gpt2 is None:
            raise FormatError(f"variant {variant!r} needs a constraint encoder (gpt2 is None)", field="gpt2")
        self.cache_dir = Path(cache_dir)
        self.allow_missing_images = allow_missing_images
        self.flush_every = max(1, flush_every)
        if encoders is not None and not encoders_match(encoders.spec, spec, variant):
            raise FormatError("the encoders do not match the spec", field="encoders", value=encoders.spec)
        self.encoders = encoders or FrozenEncoders(spec, device=device, batch_size=batch_size)
        self._clip_dir = self.cache_dir / f"clip-{identity_hash(spec.clip_identity())}"
        self._images = VectorStore(self._clip_dir / "image.npz")
        self._questions = VectorStore(self._clip_dir / "question.npz")
        self._constraints: VectorStore | None = None
        self._gpt2_dir: Path | None = None
        if variant != "none":
            self._gpt2_dir = self.cache_dir / f"gpt2-{identity_hash(spec.gpt2_identity())}"
            self._constraints = VectorStore(self._gpt2_dir / "constraint.npz")
        self._checked: set[str] = set()
        self.computed = {"image": 0, "question": 0, "constraint": 0}
        weakref.finalize(self, _flush_stores, [self._images, self._questions, self._constraints])

    # ------------------------------------------------------------------ inputs
    def image_key_and_loader(self, example: Any) -> tuple[str, Any]:
        """``(cache key, load() -> PIL image)`` of an example's image.

        Raises:
            MissingImageError: no rendered image and not ``allow_missing_images``.
            FormatError: the image file cannot be read.
        """
        path = getattr(example, "image_path", None)
        if path is None or not Path(path).is_file():
            if not self.allow_missing_images:
                question = example.question
                name = question.image_filename or getattr(example.partial_scene, "image_filename", None)
                raise MissingImageError(
                    f"the partial scene's image is not rendered (expected incomplete/images/{question.split}/{name} "
                    "in the dataset folder); render it with `python -m clevr_poc render --dataset DIR`, or pass "
                    "--allow-missing-images (allow_missing_images=True) to use a blank placeholder image",
                    source=path or name, field="image_filename", value=name)
            return PLACEHOLDER_KEY, _placeholder
        path = Path(path)
        data = read_image_bytes(path)
        return f"sha1:{_sha1(data)}", lambda: _open_image(path, data)

    def question_key(self, example: Any) -> tuple[str, str]:
        text = example.question.text
        return f"sha1:{_sha1(text.encode('utf-8'))}", text

    def constraint_key(self, example: Any) -> tuple[str, list[str]]:
        sentences = constraint_sentences(example.environment, self.variant)
        return f"{self.variant}:sha1:{_sha1(chr(10).join(sentences).encode('utf-8'))}", sentences

    # ------------------------------------------------------------------ features
    def features(self, examples: Sequence[Any], *, progress: bool = False) -> FeatureArrays:
        """Embeddings of ``examples`` (computing and caching the missing ones).

        Raises:
            MissingImageError, FormatError: see :meth:`image_key_and_loader`; PretrainedModelError when an
            encoder has to be built and its weights are missing.
        """
        examples = list(examples)
        image_keys, question_keys, constraint_keys = [], [], []
        todo_images: dict[str, Any] = {}
        todo_questions: dict[str, str] = {}
        todo_constraints: dict[str, list[str]] = {}
        for example in examples:
            key, load = self.image_key_and_loader(example)
            image_keys.append(key)
            if key not in self._images:
                todo_images.setdefault(key, load)
            key, text = self.question_key(example)
            question_keys.append(key)
            if key not in self._questions:
                todo_questions.setdefault(key, text)
            if self._constraints is not None:
                key, sentences = self.constraint_key(example)
                constraint_keys.append(key)
                if key not in self._constraints:
                    todo_constraints.setdefault(key, sentences)
        if todo_images or todo_questions:
            self._check_digest("clip")
        if todo_constraints:
            self._check_digest("gpt2")
        total = len(todo_images) + len(todo_questions) + len(todo_constraints)
        bar = progress_bar(total, enabled=progress and total > 0, description="encoding (frozen CLIP/GPT-2)")
        try:
            self._compute(self._images, todo_images, lambda loads: self.encoders.encode_images([f() for f in loads]),
                          "image", bar)
            self._compute(self._questions, todo_questions, self.encoders.encode_texts, "question", bar)
            if self._constraints is not None:
                self._compute(self._constraints, todo_constraints,
                              lambda groups: np.stack([self.encoders.encode_constraints(s) for s in groups]),
                              "constraint", bar)
        finally:
            if bar is not None:
                bar.close()
        image = np.stack([self._images.get(k) for k in image_keys]) if examples else np.zeros((0, 0), np.float32)
        question = np.stack([self._questions.get(k) for k in question_keys]) if examples else image
        constraints = None
        if self._constraints is not None:
            constraints = (np.stack([self._constraints.get(k) for k in constraint_keys]) if examples
                           else np.zeros((0, 0), np.float32))
        targets = to_multi_hot([e.question.answer or () for e in examples])
        attributes = tuple(e.question.query_attribute for e in examples)
        return FeatureArrays(image, question, constraints, targets, attributes)

    def _compute(self, store: VectorStore, todo: dict[str, Any], encode: Any, kind: str, bar: Any) -> None:
        keys = list(todo)
        step = max(1, min(self.flush_every, 64))
        for start in range(0, len(keys), step):
            chunk = keys[start:start + step]
            vectors = encode([todo[k] for k in chunk])
            for key, vector in zip(chunk, vectors):
                store.put(key, vector)
            self.computed[kind] += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
            if store.pending >= self.flush_every:
                store.flush()

    def flush(self) -> None:
        """Write every cache file that has new vectors (also done every ``flush_every`` new vectors, and
        when the extractor is garbage-collected or the interpreter exits)."""
        for store in (self._images, self._questions, self._constraints):
            if store is not None:
                store.flush()

    def _check_digest(self, which: str) -> None:
        """Before adding vectors to a cache folder: the encoder's weights must be those that made it."""
        if which in self._checked:
            return
        folder = self._clip_dir if which == "clip" else self._gpt2_dir
        assert folder is not None
        digest = self.encoders.clip_digest() if which == "clip" else self.encoders.gpt2_digest()
        identity = self.spec.clip_identity() if which == "clip" else self.spec.gpt2_identity()
        spec_file = folder / "spec.json"
        if spec_file.is_file():
            recorded = read_json(spec_file)
            if not isinstance(recorded, dict) or recorded.get("digest") != digest:
                raise FormatError(f"this feature cache was computed by {which} encoder weights other than those "
                                  f"built now (digest {recorded.get('digest') if isinstance(recorded, dict) else None!r}"
                                  f" != {digest!r}); use another cache folder or delete this one", source=folder)
        else:
            atomic_write_json(spec_file, {"identity": identity, "digest": digest}, indent=1)
        self._checked.add(which)


def _flush_stores(stores: list[VectorStore | None]) -> None:
    for store in stores:
        if store is not None:
            store.flush()


def _placeholder() -> Any:
    from PIL import Image

    return Image.new("RGB", PLACEHOLDER_SIZE, PLACEHOLDER_RGB)


def _open_image(path: Path, data: bytes) -> Any:
    """RGB ``PIL.Image.Image`` of an image file's bytes (the library's one reader, :mod:`clevr_poc.image_files`)."""
    from PIL import Image

    return Image.fromarray(rgb_pixels(open_image(data, where=path), where=path))
