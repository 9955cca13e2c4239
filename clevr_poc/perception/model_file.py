"""The finished perception model file (``perception.pt``): its format tag and its reader.

Shared by inference (:mod:`clevr_poc.perception.perceiver`) and training
(:mod:`clevr_poc.perception.perception_training`), so that inference never imports the training code (as
torchvision keeps its weights' metadata apart from its training references).

The file is a ``torch.save`` dict: ``format`` (:data:`MODEL_FORMAT`), ``model_config``
(:class:`~clevr_poc.perception.models.ModelConfig` JSON), ``detector`` and ``attributes`` (state dicts),
``position_sigma`` and ``training`` (metadata), written by :func:`clevr_poc.perception.perception_training.train`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from clevr_poc.errors import FormatError

#: Format tag of ``perception.pt`` (the ``format`` key of the saved dict).
MODEL_FORMAT = "clevr_poc.perception/1"
#: File name of the model inside a model folder.
MODEL_FILE = "perception.pt"


def read_model_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The contents of a finished model file (``perception.pt``, or a folder holding it), loaded on the
    CPU with ``weights_only=True`` (no pickled code runs).

    Raises:
        FormatError: no such file, an unreadable file, or not a perception model (wrong ``format`` tag).
    """
    path = Path(path)
    if path.is_dir():
        path = path / MODEL_FILE
    if not path.is_file():
        raise FormatError("model file not found", source=path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt or foreign file: many exception types
        raise FormatError(f"not a readable model file ({exc.__class__.__name__})", source=path) from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise FormatError(f"not a perception model (expected format {MODEL_FORMAT!r})", source=path,
                          field="format", value=data.get("format") if isinstance(data, dict) else None)
    return data


__all__ = ["MODEL_FILE", "MODEL_FORMAT", "read_model_file"]
