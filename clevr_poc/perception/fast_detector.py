"""The detector's inference on the CPU, faster (issue 27): the backbone, its FPN and the RPN head as one
frozen TorchScript graph (``torch.jit.trace`` + ``freeze`` + ``optimize_for_inference``: batch norms folded
into the convolutions, oneDNN weights pre-packed once), and the RPN's anchors kept per image size.

::

    fast = FastDetector(detector)          # detector: eval-mode torchvision FasterRCNN (models.build_detector)
    outputs = fast([image])                 # = detector([image]): [{"boxes": (D, 4), "scores": (D,), "labels": (D,)}]

The outputs are those of ``detector([image])`` up to the last float bits (the folded and pre-packed
convolutions round differently: features within about 2e-5, boxes within about 1e-3 px; the detections
of the 320 release-look questions and 200 other test images are the same boxes, scores and order, and
their answers identical: ``docs/benchmarks.md``, "Throughput per stage"). The RPN's proposal filter,
the RoI heads and the post-processing are torchvision's own code on the detector's own modules, so
their settings (``roi_heads.score_thresh``, ...) still apply.

:func:`frozen_graph` returns None where TorchScript is unavailable (a torch without it, a model it cannot
trace); :class:`FastDetector` then runs the eager modules, with the same results as ``detector``. The
frozen graph is a copy: :meth:`FastDetector.current` tells whether the detector's weights changed since
(training in place), so that :class:`~clevr_poc.perception.perceiver.Perception` never uses a stale copy.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.rpn import concat_box_prediction_layers

#: Side (pixels) of the image the graph is traced with; the traced graph reads any size (its
#: convolutions and the FPN's upsampling take the input's shape).
TRACE_SIDE = 320


class _BackboneAndHead(nn.Module):
    """``images (B, 3, H, W) normalised -> (features "0", "1", "2", "pool", objectness per level, box
    deltas per level)``: the detector's backbone + FPN, then its RPN head on every level."""

    def __init__(self, detector: FasterRCNN) -> None:
        super().__init__()
        self.backbone = detector.backbone
        self.head = detector.rpn.head

    def forward(self, images: torch.Tensor) -> tuple[dict[str, torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
        features = self.backbone(images)
        objectness, deltas = self.head(list(features.values()))
        return dict(features), objectness, deltas


def frozen_graph(detector: FasterRCNN) -> Any | None:
    """The detector's backbone + FPN + RPN head as a frozen, inference-optimised TorchScript module (CPU,
    eval mode; outputs as :class:`_BackboneAndHead`), or None where TorchScript cannot build it."""
    module = _BackboneAndHead(detector).eval()
    example = torch.zeros(1, 3, TRACE_SIDE, TRACE_SIDE)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")   # torch >= 2.9 calls torch.jit deprecated (FutureWarning)
            traced = torch.jit.trace(module, example, strict=False, check_trace=False)
            return torch.jit.optimize_for_inference(torch.jit.freeze(traced))
    except Exception:   # noqa: BLE001 - any failure of an optional speed-up: the eager modules are used
        return None


def _parameter_versions(module: nn.Module) -> tuple[int, ...]:
    """The in-place modification counters of ``module``'s parameters and buffers (an optimizer step or
    ``load_state_dict`` increments them)."""
    return tuple(t._version for t in module.parameters()) + tuple(t._version for t in module.buffers())


class FastDetector:
    """``detector([image, ...])`` of an eval-mode torchvision Faster R-CNN on the CPU, through
    :func:`frozen_graph` (module doc). Not a torch module: it is rebuilt from the detector, never saved
    or pickled (:meth:`__reduce__` pickles the detector and rebuilds)."""

    def __init__(self, detector: FasterRCNN) -> None:
        self.detector = detector
        self._versions = _parameter_versions(detector)
        self.graph = frozen_graph(detector)
        self._anchors: dict[tuple, list[torch.Tensor]] = {}

    def __reduce__(self) -> tuple:
        return (FastDetector, (self.detector,))

    def current(self, detector: Any) -> bool:
        """Whether this is ``detector``'s fast path: the same object, in eval mode, with the weights it
        was built from."""
        return (detector is self.detector and not detector.training
                and _parameter_versions(detector) == self._versions)

    @torch.no_grad()
    def __call__(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """The detections of float (3, H, W) images in [0, 1] (``detector(images)`` in eval mode)."""
        detector = self.detector
        if self.graph is None:
            return detector(images)
        original_sizes = [(int(image.shape[-2]), int(image.shape[-1])) for image in images]
        batch, _ = detector.transform(images, None)
        features, objectness, deltas = self.graph(batch.tensors)
        features = OrderedDict((k, features[k]) for k in ("0", "1", "2", "pool"))
        rpn = detector.rpn
        anchors = self._anchors_for(batch, list(features.values()))
        counts = [o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness]
        objectness, deltas = concat_box_prediction_layers(objectness, deltas)
        proposals = rpn.box_coder.decode(deltas, anchors).view(len(anchors), -1, 4)
        boxes, _ = rpn.filter_proposals(proposals, objectness, batch.image_sizes, counts)
        detections, _ = detector.roi_heads(features, boxes, batch.image_sizes, None)
        return detector.transform.postprocess(detections, batch.image_sizes, original_sizes)

    def _anchors_for(self, batch: Any, features: list[torch.Tensor]) -> list[torch.Tensor]:
        """The RPN's anchors (one (A, 4) tensor per image), computed once per batch shape."""
        key = (tuple(batch.tensors.shape), tuple(batch.image_sizes),
               tuple(tuple(f.shape[-2:]) for f in features))
        anchors = self._anchors.get(key)
        if anchors is None:
            anchors = self._anchors[key] = self.detector.rpn.anchor_generator(batch, features)
        return anchors


__all__ = ["FastDetector", "TRACE_SIDE", "frozen_graph"]
