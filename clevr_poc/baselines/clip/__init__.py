"""The CLIP baselines of CLEVR-POC (paper §4.1.1, Fig. 3, eq. 1; Table 2 columns CLIP-ASP, CLIP-NL,
CLIP (no knowledge)).

Frozen CLIP ViT-B/32 encodes the partial scene's image and the question; frozen GPT-2 encodes the
environment's constraints (English for ``nl``, ASP for ``asp``, nothing for ``none``); a feed-forward
multi-label classifier over the 17 labels, the only trained part, is trained with the weighted binary
cross-entropy of eq. 1 on cached features.

::

    from clevr_poc.baselines.clip import CLIPBaseline, EncoderSpec, TrainConfig, train
    spec = EncoderSpec()                                   # OpenAI ViT-B-32 + gpt2 (the paper's)
    spec = EncoderSpec(clip_pretrained=None, gpt2="tiny")  # random weights, offline
    result = train(train_examples, "runs/clip-nl", TrainConfig(variant="nl"), spec, val_examples=val)
    model = CLIPBaseline.from_checkpoint("runs/clip-nl")   # model.predict(example) -> frozenset of labels
    report = clevr_poc.evaluation.evaluate(model, test_examples)

Command line: ``python -m clevr_poc.baselines.clip train|evaluate`` (:mod:`~clevr_poc.commands.clip_command`)
and ``python -m clevr_poc evaluate --model clip-nl|clip-asp|clip-none --checkpoint DIR``.

Modules: :mod:`~.encoders` (loading CLIP/GPT-2, offline rules, embeddings), :mod:`~.features` (inputs
and the feature cache), :mod:`~.model` (head, weighted BCE, decoding), :mod:`~.clip_training` (training,
checkpoints, :class:`CLIPBaseline`), :mod:`~.clip_errors`. Names that need torch are imported on first use.
"""

from __future__ import annotations

from typing import Any

from clevr_poc.baselines.clip.encoders import (
    DEFAULT_CLIP_MODEL, DEFAULT_CLIP_PRETRAINED, DEFAULT_GPT2, TINY_GPT2, EncoderSpec, FrozenEncoders, hub_offline,
    load_clip, load_gpt2,
)
from clevr_poc.baselines.clip.clip_errors import MissingImageError, PretrainedModelError
from clevr_poc.baselines.clip.features import (
    VARIANT_NAMES, VARIANTS, FeatureArrays, FeatureExtractor, constraint_sentences,
)

_LAZY = {
    "weighted_bce": "model", "MultiLabelHead": "model", "decode": "model", "attribute_mask": "model",
    "WEIGHTINGS": "model", "RESTRICTIONS": "model", "DEFAULT_BETA": "model", "DEFAULT_THRESHOLD": "model",
    "CLIPBaseline": "clip_training", "TrainConfig": "clip_training", "TrainResult": "clip_training", "EpochRecord": "clip_training",
    "train": "clip_training",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'clevr_poc.baselines.clip' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"clevr_poc.baselines.clip.{module}"), name)


__all__ = [
    "DEFAULT_CLIP_MODEL", "DEFAULT_CLIP_PRETRAINED", "DEFAULT_GPT2", "TINY_GPT2", "VARIANTS", "VARIANT_NAMES",
    "EncoderSpec", "FeatureArrays", "FeatureExtractor", "FrozenEncoders", "MissingImageError",
    "PretrainedModelError", "constraint_sentences", "hub_offline", "load_clip", "load_gpt2", *_LAZY,
]
