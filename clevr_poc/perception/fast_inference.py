"""Perception's networks on the CPU, faster (issue 27): frozen TorchScript graphs (``torch.jit.trace`` +
``freeze`` + ``optimize_for_inference``: batch norms folded into the convolutions, oneDNN weights
pre-packed once) of the detector's backbone, FPN and RPN head (with the RPN's anchors kept per image
size), and of the attribute network.

::

    fast = FastDetector(detector)          # detector: eval-mode torchvision FasterRCNN (models.build_detector)
    outputs = fast([image])                 # = detector([image]): [{"boxes": (D, 4), "scores": (D,), "labels": (D,)}]
    logits = FastAttributes(net, config)(crops, contexts, geometry)   # = net(crops, contexts, geometry)

The outputs are those of the eager modules up to the last float bits (the folded and pre-packed
convolutions round differently: features within about 2e-5, boxes within about 1e-4 px, attribute logits
within about 3e-5; the detections of the 320 release-look questions and 200 other test images are the
same boxes, scores and order, and the answers to the 320 questions identical: ``docs/benchmarks.md``,
"Throughput per stage"). The RPN's proposal filter, the RoI heads and the post-processing are
torchvision's own code on the detector's own modules, so their settings (``roi_heads.score_thresh``, ...)
still apply.

:func:`frozen_graph` returns None where TorchScript is unavailable (a torch without it, a model it cannot
trace); the eager modules then run, with their own results. A frozen graph is a copy: ``current(module)``
tells whether the module's weights changed since (training in place, ``load_state_dict``, ``.to()``, a
direct submodule replaced), so that :class:`~clevr_poc.perception.perceiver.Perception` does not use a
stale copy (a submodule replaced deeper than that is not noticed: make a new ``Perception``).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.rpn import concat_box_prediction_layers

from clevr_poc.perception.models import NUM_GEOMETRY_FEATURES

#: Side (pixels) of the image the graph is traced with; the traced graph reads any size (its
#: convolutions and the FPN's upsampling take the input's shape).
TRACE_SIDE = 320
#: Runs of a new graph on its example input: TorchScript's executor profiles the first two runs and
#: optimises on the third (the first image costs about 4x, the next two 1.7x a steady one), so that these
#: costs come with the model's load, not with the first questions.
WARM_UP_RUNS = 3


class _BackboneAndHead(nn.Module):
    """``images (B, 3, H, W) in [0, 1] -> (features "0", "1", "2", "pool", objectness per level, box
    deltas per level)``: the detector's normalisation (``(x - mean) / std`` per channel, the operations of
    torchvision's ``GeneralizedRCNNTransform.normalize``), its backbone + FPN, then its RPN head on every
    level."""

    def __init__(self, detector: FasterRCNN) -> None:
        super().__init__()
        self.backbone = detector.backbone
        self.head = detector.rpn.head
        transform = detector.transform
        self.register_buffer("mean", torch.as_tensor(transform.image_mean, dtype=torch.float32)[:, None, None])
        self.register_buffer("std", torch.as_tensor(transform.image_std, dtype=torch.float32)[:, None, None])

    def forward(self, images: torch.Tensor) -> tuple[dict[str, torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
        features = self.backbone((images - self.mean) / self.std)
        objectness, deltas = self.head(list(features.values()))
        return dict(features), objectness, deltas


def frozen_graph(module: nn.Module, example: tuple[torch.Tensor, ...]) -> Any | None:
    """``module`` (eval mode, CPU) traced on ``example`` inputs, frozen and optimised for inference, then run
    :data:`WARM_UP_RUNS` times on them; None where TorchScript cannot build it. The copy reads inputs of
    other sizes (shapes are not baked in)."""
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")   # torch >= 2.9 calls torch.jit deprecated (FutureWarning)
            traced = torch.jit.trace(module, example, strict=False, check_trace=False)
            graph = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
            for _ in range(WARM_UP_RUNS):   # TorchScript's profiling runs, with the model's load
                graph(*example)
            return graph
    except Exception:   # noqa: BLE001 - any failure of an optional speed-up: the eager modules are used
        return None


class _Weights:
    """What a graph was built from: the module, its direct submodules, and each parameter and buffer
    tensor with its in-place modification counter (an optimizer step or ``load_state_dict`` increments
    it) and its storage (``.data =``, ``.to()`` replace it). :meth:`unchanged` checks them in about 30
    microseconds, without walking the module tree."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.children = tuple(module.children())
        self.tensors = (*module.parameters(), *module.buffers())
        self.state = self._state()

    def _state(self) -> tuple[tuple[int, int], ...]:
        return tuple((t._version, t.data_ptr()) for t in self.tensors)

    def unchanged(self, module: Any) -> bool:
        """Whether ``module`` is the module, in eval mode, with the same submodules and weights."""
        return (module is self.module and not module.training and tuple(module.children()) == self.children
                and self._state() == self.state)


class FastDetector:
    """``detector([image, ...])`` of an eval-mode torchvision Faster R-CNN on the CPU, through
    :func:`frozen_graph` (module doc). Not a torch module: it is rebuilt from the detector, never saved
    or pickled (:meth:`__reduce__` pickles the detector and rebuilds)."""

    def __init__(self, detector: FasterRCNN) -> None:
        self.detector = detector
        self._weights = _Weights(detector)
        self.graph = frozen_graph(_BackboneAndHead(detector).eval(), (torch.zeros(1, 3, TRACE_SIDE, TRACE_SIDE),))
        self._anchors: dict[tuple, list[torch.Tensor]] = {}

    def __reduce__(self) -> tuple:
        return (FastDetector, (self.detector,))

    def current(self, detector: Any) -> bool:
        """Whether this is ``detector``'s fast path: the same object, in eval mode, with the weights it
        was built from."""
        return self._weights.unchanged(detector)

    @torch.no_grad()
    def __call__(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """The detections of float (3, H, W) images in [0, 1] (``detector(images)`` in eval mode)."""
        detector = self.detector
        if self.graph is None:
            return detector(images)
        batch = self._batch(images)
        features, objectness, deltas = self.graph(batch.tensors)
        features = OrderedDict(features)   # the backbone's levels in its order ("0", "1", "2", "pool")
        rpn = detector.rpn
        anchors = self._anchors_for(batch, list(features.values()))
        counts = [o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness]
        objectness, deltas = concat_box_prediction_layers(objectness, deltas)
        proposals = rpn.box_coder.decode(deltas, anchors).view(len(anchors), -1, 4)
        boxes, _ = rpn.filter_proposals(proposals, objectness, batch.image_sizes, counts)
        detections, _ = detector.roi_heads(features, boxes, batch.image_sizes, None)
        return detector.transform.postprocess(detections, batch.image_sizes, batch.image_sizes)

    def _batch(self, images: list[torch.Tensor]) -> ImageList:
        """The images in one zero-based batch as torchvision's transform pads them (sides rounded up to
        ``size_divisible``), before normalisation: the padding holds the channel means, which the graph
        normalises to exactly 0, torchvision's padding value. Sizes are the images' own (no resize)."""
        transform = self.detector.transform
        for image in images:
            if image.dim() != 3 or not image.is_floating_point():
                raise ValueError(f"images are float (C, H, W) tensors, got {image.dtype} {tuple(image.shape)}")
        sizes = [(int(image.shape[-2]), int(image.shape[-1])) for image in images]
        step = transform.size_divisible
        height = -(-max(h for h, _ in sizes) // step) * step
        width = -(-max(w for _, w in sizes) // step) * step
        batch = images[0].new_empty((len(images), images[0].shape[0], height, width))
        batch[:] = torch.as_tensor(transform.image_mean, dtype=batch.dtype)[:, None, None]
        for i, (image, (h, w)) in enumerate(zip(images, sizes)):
            batch[i, :, :h, :w].copy_(image)
        return ImageList(batch, sizes)

    def _anchors_for(self, batch: Any, features: list[torch.Tensor]) -> list[torch.Tensor]:
        """The RPN's anchors (one (A, 4) tensor per image), computed once per batch shape."""
        key = (tuple(batch.tensors.shape), tuple(batch.image_sizes),
               tuple(tuple(f.shape[-2:]) for f in features))
        anchors = self._anchors.get(key)
        if anchors is None:
            anchors = self._anchors[key] = self.detector.rpn.anchor_generator(batch, features)
        return anchors


class FastAttributes:
    """``net(crops, contexts, geometry)`` of an eval-mode :class:`~clevr_poc.perception.models.AttributeNet`
    on the CPU through :func:`frozen_graph` (module doc): the same dict of logits; the eager network where
    no graph could be built. Pickled as its network (:meth:`__reduce__`)."""

    def __init__(self, net: nn.Module, config: Any) -> None:
        self.net, self.config = net, config
        self._weights = _Weights(net)
        example = (torch.zeros(2, 3, config.crop_size, config.crop_size),
                   torch.zeros(2, 4, config.context_height, config.context_width),
                   torch.zeros(2, NUM_GEOMETRY_FEATURES))
        self.graph = frozen_graph(net, example)

    def __reduce__(self) -> tuple:
        return (FastAttributes, (self.net, self.config))

    def current(self, net: Any) -> bool:
        """Whether this is ``net``'s fast path: the same object, in eval mode, with the weights it was
        built from."""
        return self._weights.unchanged(net)

    @torch.no_grad()
    def __call__(self, crops: torch.Tensor, contexts: torch.Tensor, geometry: torch.Tensor) -> dict[str, torch.Tensor]:
        """Logits (``AttributeNet.forward``) of K objects: crops (K, 3, s, s), contexts (K, 4, h, w), geometry (K, 9)."""
        if self.graph is None:
            return self.net(crops, contexts, geometry)
        return dict(self.graph(crops, contexts, geometry))


__all__ = ["FastAttributes", "FastDetector", "TRACE_SIDE", "frozen_graph"]
