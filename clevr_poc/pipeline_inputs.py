"""The inputs of one :class:`~clevr_poc.pipeline.Pipeline` question, coerced to typed values: an
:class:`Environment` (or its ``.lp`` path), a :class:`Scene` (or its JSON / path), an image (path, PIL image
or array) as uint8 (H, W, 3), and :class:`PipelineInput` (one question of a batch)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.scene import Scene


def as_environment(environment: Any) -> Environment:
    """An :class:`Environment` from an Environment or the path of an official ``.lp`` file.

    Raises:
        FormatError: None, another type, a missing file or a malformed program.
    """
    if isinstance(environment, Environment):
        return environment
    if isinstance(environment, (str, os.PathLike)):
        path = Path(environment)
        if not path.is_file():
            raise FormatError("environment file not found", source=path, field="environment")
        return Environment.from_lp(path)
    raise FormatError("an environment is a clevr_poc.Environment or the path of an .lp file", field="environment",
                      value=type(environment).__name__)


def as_scene(scene: Any) -> Scene:
    """A :class:`Scene` from a Scene, a scene JSON mapping or the path of a scene JSON file.

    Raises:
        FormatError: another type, a missing file or a malformed scene.
    """
    if isinstance(scene, Scene):
        return scene
    if isinstance(scene, (str, os.PathLike)):
        return Scene.from_file(scene)
    if isinstance(scene, Mapping):
        return Scene.from_json(dict(scene), source="scene")
    raise FormatError("a scene is a clevr_poc.Scene, its JSON, or the path of a scene JSON file", field="scene",
                      value=type(scene).__name__)


def as_image(image: Any) -> np.ndarray:
    """The image as a writable, C-contiguous uint8 array of shape (H, W, 3), RGB
    (:func:`clevr_poc.image_files.as_rgb_array`, the library's one image reader).

    Accepts a file path (PNG, JPEG, ...), a PIL image, or a numpy array (H, W, 3) / (H, W, 4) of uint8
    (0-255) or floats in [0, 1] (alpha dropped).

    Raises:
        clevr_poc.image_files.ImageFileError: None, another type, a missing or unreadable file, a bad
            shape or dtype, an image over the size caps.
    """
    from clevr_poc.image_files import as_rgb_array

    return as_rgb_array(image)


# ====================================================================== inputs of one question
@dataclass(frozen=True)
class PipelineInput:
    """One question for :meth:`Pipeline.answer_batch` (the arguments of :meth:`Pipeline.answer`).

    Attributes:
        image: path, PIL image or uint8 (H, W, 3) array; None when the scene is given.
        question: English text or a :class:`Question` (its ``text``, and its ``asp_query`` for
            ``parser="given"``).
        environment: :class:`Environment` or ``.lp`` path.
        scene: the partial scene (Scene, JSON or path); skips perception when set.
        camera: Camera, camera JSON, a preset name, or the rendered scene (Scene, JSON or path); None: the
            pipeline's camera source (default: the official camera).
        query: an ASP query; skips the parser when set.
    """

    image: Any = None
    question: Any = None
    environment: Any = None
    scene: Any = None
    camera: Any = None
    query: str | None = None

    @classmethod
    def of(cls, item: Any, *, scene_given: bool = False) -> "PipelineInput":
        """An input from a :class:`PipelineInput`, a mapping with the same keys, a tuple ``(image,
        question, environment[, scene[, camera]])``, or a dataset :class:`~clevr_poc.dataset_reader.Example`
        (image file, question, environment; the camera from its partial scene, following the pipeline's
        camera source, and with ``scene_given`` the gold partial scene itself).

        Raises:
            FormatError: anything else, or unknown mapping keys.
        """
        if isinstance(item, PipelineInput):
            return item
        if isinstance(item, Mapping):
            unknown = set(item) - set(cls.__dataclass_fields__)
            if unknown:
                raise FormatError(f"unknown keys {sorted(unknown)}; expected some of "
                                  f"{list(cls.__dataclass_fields__)}", field="item")
            return cls(**dict(item))
        if isinstance(item, tuple) and 3 <= len(item) <= 5:
            return cls(*item)
        if hasattr(item, "partial_scene") and hasattr(item, "question") and hasattr(item, "environment"):
            partial = item.partial_scene
            return cls(getattr(item, "image_path", None), item.question, item.environment,
                       partial if scene_given else None, partial)
        raise FormatError("an item is a PipelineInput, a mapping, a tuple (image, question, environment[, scene"
                          "[, camera]]) or a dataset Example", field="item", value=type(item).__name__)
