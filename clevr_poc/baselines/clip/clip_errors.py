"""Typed errors of the CLIP baseline (torch-free, importable without the ``[clip]`` extra)."""

from __future__ import annotations

from clevr_poc.errors import ClevrPocError, FormatError


class PretrainedModelError(ClevrPocError):
    """Pretrained weights (CLIP or GPT-2) are not available: not in the local cache while offline, a local
    path that does not exist, or a download that failed.

    Attributes:
        model: what was asked for, e.g. ``"open_clip ViT-B-32 (pretrained='openai')"`` or ``"GPT-2 'gpt2'"``.
        hint: how to provide the weights (a local path option, or how to fill the cache).
    """

    def __init__(self, model: str, reason: str, hint: str) -> None:
        self.model = model
        self.hint = hint
        super().__init__(f"{model}: {reason}. {hint}")


class MissingImageError(FormatError):
    """An example's partial-scene image is not rendered (``incomplete/images/<split>/<image_filename>``).

    Raised unless ``allow_missing_images`` (CLI: ``--allow-missing-images``) is set, in which case a blank
    placeholder image is used instead.
    """
