"""The rendered images of an evaluation run, checked before any model sees them (issue #26 item 9).

Every model that reads images (NS-VQA with perception, the VLM, the CLIP baselines) gets the same rule,
``evaluate --allow-missing-images`` or not:

* without it, the first missing or unreadable image stops the run before any model call with one
  :class:`~clevr_poc.image_files.ImageFileError` naming the file;
* with it, each such question is a failed prediction (no answer, scored like a parse failure) whose
  ``error`` is ``"image: <cause naming the file>"``, in ``predictions.json``/``report.json``, and the
  command prints one line per failure; the model never sees those questions.

"Unreadable" is whatever the library's one image reader (:func:`clevr_poc.image_files.read_rgb`) refuses:
a missing file, a FIFO, an undecodable or truncated image, one over the size caps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from clevr_poc.evaluation.evaluator import model_name
from clevr_poc.evaluation.model_protocol import Model
from clevr_poc.evaluation.report import IMAGE_FAILURE_PREFIX, Prediction
from clevr_poc.image_files import ImageFileError, read_rgb, require_pillow

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example


def expected_image(example: "Example", dataset: str | os.PathLike[str]) -> Path:
    """Where the example's partial-scene image is, or would be once rendered:
    ``DATASET/incomplete/images/<split>/<image_filename>`` (file name only: no folder of a record is used)."""
    question = example.question
    name = question.image_filename or getattr(example.partial_scene, "image_filename", None) or "?"
    return Path(dataset) / "incomplete" / "images" / str(question.split) / Path(name).name


def image_problem(example: "Example", dataset: str | os.PathLike[str]) -> str | None:
    """Why the example's image cannot be read (one line naming the file), or None when it can."""
    path = getattr(example, "image_path", None)
    if path is None:
        return (f"{expected_image(example, dataset)}: the image is not rendered (render it with "
                "python -m clevr_poc render --dataset DIR)")
    try:
        read_rgb(path)
    except ImageFileError as exc:
        return str(exc)
    return None


def check_images(examples: Sequence["Example"], dataset: str | os.PathLike[str], *, allow_missing: bool
                 ) -> dict[int, str]:
    """``id(example) -> cause`` of every example whose image cannot be read.

    Raises:
        ImageFileError: the first such image when not ``allow_missing`` (the message names the file);
            Pillow not installed (whatever ``allow_missing``: no image could be read).
    """
    if examples:
        require_pillow()
    failures: dict[int, str] = {}
    for example in examples:
        problem = image_problem(example, dataset)
        if problem is None:
            continue
        if not allow_missing:
            raise ImageFileError(f"{problem}; --allow-missing-images scores such questions as failures")
        failures[id(example)] = problem
    return failures


class ImageCheckedModel:
    """``model`` with the questions of :func:`check_images`'s failures answered by a failed
    :class:`Prediction` (``error="image: <cause>"``) instead of the model. Same name as ``model``."""

    def __init__(self, model: Model, failures: dict[int, str]):
        self.model = model
        self.failures = dict(failures)
        self.name = model_name(model)

    def predict_batch(self, examples: Sequence["Example"]) -> list[Prediction]:
        examples = list(examples)
        todo = [e for e in examples if id(e) not in self.failures]
        outputs = list(self.model.predict_batch(todo)) if todo else []
        if len(outputs) != len(todo):  # the evaluator reports the model's wrong count
            return outputs
        answered = iter(outputs)
        return [Prediction(None, IMAGE_FAILURE_PREFIX + self.failures[id(e)]) if id(e) in self.failures else next(answered)
                for e in examples]
