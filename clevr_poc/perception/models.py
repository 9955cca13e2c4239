"""The two networks of the perception pipeline (torch / torchvision; paper §4.1.2, NS-VQA, Yi et al. 2018).

* :func:`build_detector`: a class-agnostic Faster R-CNN (torchvision ``FasterRCNN``) on a small
  from-scratch backbone with an FPN. ImageNet weights cannot be downloaded here, so nothing is
  pre-trained: a light ResNet-style backbone (about 0.3 M parameters, strides 4/8/16) is trained on
  our own renders. Input: float images (3, H, W) in [0, 1] of any size (320 x 240, 320 x 320,
  480 x 320, ...: the images are never resized, so the boxes are in the image's own pixels); output:
  boxes ``(x1, y1, x2, y2)`` in pixels with an objectness score.
* :class:`AttributeNet`: the NS-VQA attribute network: an object crop and the full image (with the
  object's box as a fourth channel, NS-VQA's "segment + image" input) -> logits of color (8), shape
  (4), size (3), material (2), and a 2-vector offset (world units) from the ground point under the box's
  bottom-centre to the object's centre (NS-VQA regresses 3D coordinates the same way).

Hyper-parameters live in :class:`ModelConfig`, which checkpoints carry so that a model is rebuilt
exactly as trained.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.transform import GeneralizedRCNNTransform
from torchvision.ops import MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import FeaturePyramidNetwork, LastLevelMaxPool

from clevr_poc import domain

#: Proposals per FPN level the RPN keeps before its NMS at inference (300 until issue 27): 200 gives the
#: same detections (boxes, scores, order, down to score 0.05) on 1,120 test images of every look (the 320
#: release-look questions, 200 official-look ones, 600 of the training and look sets), 100 does not (17
#: of the first 520 differ); 1.2 CPU ms less per image.
RPN_PRE_NMS_TEST = 200
#: Number of geometric features the attribute network receives (:func:`clevr_poc.perception.box_geometry.box_features`).
NUM_GEOMETRY_FEATURES = 9


@dataclass(frozen=True)
class ModelConfig:
    """Hyper-parameters of both networks (stored in every checkpoint).

    Attributes:
        image_width, image_height: the size (pixels) of the renders the model was first built for; kept
            for old checkpoints only: both networks take images of any size (the detector never resizes,
            the attribute network sees fixed-size crops and a fixed-size context).
        backbone_channels: channels of the stem's two convolutions (strides 2 and 4) and of the residual stages at
            strides 8 and 16 (the stride-4 stage keeps the stem's width).
        fpn_channels: channels of every FPN level.
        anchor_sizes: one anchor size (pixels) per FPN level (strides 4, 8, 16, 32); CLEVR objects at
            320 x 240 are 10-70 pixels wide.
        aspect_ratios: anchor aspect ratios (height / width), the same on every level.
        box_head_dim: width of the two-layer box head.
        crop_size: side (pixels) of the object crop fed to the attribute network.
        crop_margin: the crop is the box enlarged by this factor (context around small objects).
        context_width, context_height: size of the downscaled full image fed to the attribute network.
        attribute_channels: channels of the crop tower's stages (each: a 3x3 convolution, then a
            stride-2 one).
        context_channels: channels of the context tower's stages.
    """

    image_width: int = 320
    image_height: int = 240
    backbone_channels: tuple[int, ...] = (16, 32, 64, 96)
    fpn_channels: int = 32
    anchor_sizes: tuple[int, ...] = (12, 24, 48, 96)
    aspect_ratios: tuple[float, ...] = (0.8, 1.0, 1.25)
    box_head_dim: int = 256
    crop_size: int = 32
    crop_margin: float = 1.25
    context_width: int = 40
    context_height: int = 30
    attribute_channels: tuple[int, ...] = (24, 48, 64)
    context_channels: tuple[int, ...] = (16, 32)

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ModelConfig":
        known = cls.__dataclass_fields__
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})


def _conv_bn(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class _ResidualBlock(nn.Module):
    """Basic ResNet block (two 3x3 convolutions), downsampling by ``stride``."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = _conv_bn(cin, cout, stride)
        self.conv2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = (nn.Identity() if stride == 1 and cin == cout else
                     nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv2(self.conv1(x)) + self.skip(x))


class SmallBackboneWithFPN(nn.Module):
    """Backbone (a stride-4 stem, then residual stages at strides 4, 8, 16) + FPN on the stride 4, 8, 16 maps, + a stride-32 max-pool level.

    ``forward(images: float (B, 3, H, W)) -> OrderedDict[str, (B, fpn_channels, H/s, W/s)]`` with keys
    ``"0"`` (s=4), ``"1"`` (8), ``"2"`` (16), ``"pool"`` (32): the interface FasterRCNN expects.
    """

    def __init__(self, channels: tuple[int, ...], fpn_channels: int) -> None:
        super().__init__()
        c1, c2, c3, c4 = channels
        self.stem = nn.Sequential(_conv_bn(3, c1, 2), _conv_bn(c1, c2, 2))
        self.stage1 = _ResidualBlock(c2, c2, 1)
        self.stage2 = _ResidualBlock(c2, c3, 2)
        self.stage3 = _ResidualBlock(c3, c4, 2)
        self.fpn = FeaturePyramidNetwork([c2, c3, c4], fpn_channels, extra_blocks=LastLevelMaxPool())
        self.out_channels = fpn_channels

    def forward(self, x: torch.Tensor) -> "OrderedDict[str, torch.Tensor]":
        f1 = self.stage1(self.stem(x))
        f2 = self.stage2(f1)
        f3 = self.stage3(f2)
        return self.fpn(OrderedDict([("0", f1), ("1", f2), ("2", f3)]))


class NativeSizeTransform(GeneralizedRCNNTransform):
    """torchvision's detection transform without the resize: images are normalised and padded into a
    batch at their own size, so one detector reads 320 x 240, 320 x 320 and 480 x 320 images alike and
    its boxes are in each image's own pixels (torchvision would scale every image to ``min_size``)."""

    def resize(self, image: torch.Tensor, target: dict[str, torch.Tensor] | None = None
               ) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]:
        return image, target


def build_detector(config: ModelConfig = ModelConfig()) -> FasterRCNN:
    """A class-agnostic Faster R-CNN (2 classes: background, object) for images of any size.

    The images are not resized (:class:`NativeSizeTransform`; at 320 x 240 this is exactly what the first
    checkpoints were trained with: ``min_size = 240, max_size = 320`` scale by 1.0); normalisation uses
    mean 0.5 / std 0.25 per channel (renders, not ImageNet photos). At most 20 detections per image
    (CLEVR-POC scenes have at most 9 objects).
    """
    backbone = SmallBackboneWithFPN(tuple(config.backbone_channels), config.fpn_channels)
    anchors = AnchorGenerator(tuple((s,) for s in config.anchor_sizes),
                              (tuple(config.aspect_ratios),) * len(config.anchor_sizes))
    roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2"], output_size=7, sampling_ratio=2)
    box_head = TwoMLPHead(config.fpn_channels * 7 * 7, config.box_head_dim)
    box_predictor = FastRCNNPredictor(config.box_head_dim, 2)
    detector = FasterRCNN(
        backbone, num_classes=None,
        min_size=config.image_height, max_size=config.image_width,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.25, 0.25, 0.25],
        rpn_anchor_generator=anchors, box_roi_pool=roi_pool, box_head=box_head, box_predictor=box_predictor,
        rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=150,
        rpn_pre_nms_top_n_test=RPN_PRE_NMS_TEST, rpn_post_nms_top_n_test=100,
        rpn_batch_size_per_image=128, box_batch_size_per_image=64,
        box_score_thresh=0.05, box_detections_per_img=20,
    )
    detector.transform = NativeSizeTransform(config.image_height, config.image_width, [0.5, 0.5, 0.5],
                                             [0.25, 0.25, 0.25])
    return detector


class _Tower(nn.Sequential):
    def __init__(self, cin: int, channels: tuple[int, ...]) -> None:
        layers: list[nn.Module] = []
        for cout in channels:
            layers += [_conv_bn(cin, cout, 1), _conv_bn(cout, cout, 2)]
            cin = cout
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        super().__init__(*layers)


class AttributeNet(nn.Module):
    """NS-VQA-style attribute network.

    ``forward(crops, contexts, geometry) -> dict``:

    * ``crops``: float (B, 3, crop_size, crop_size) in [0, 1], the enlarged box resized;
    * ``contexts``: float (B, 4, context_height, context_width): the full image downscaled, plus the box
      as a binary channel;
    * ``geometry``: float (B, :data:`NUM_GEOMETRY_FEATURES`) box/camera features
      (:func:`clevr_poc.perception.box_geometry.box_features`);

    returns logits ``{"color": (B, 8), "shape": (B, 4), "size": (B, 3), "material": (B, 2)}`` (value
    order of :data:`clevr_poc.domain.DOMAINS`) and ``"offset"``: (B, 2), world units, the object centre
    minus the ground point under the box's bottom-centre, in the (camera forward, camera right) ground
    frame.
    """

    def __init__(self, config: ModelConfig = ModelConfig()) -> None:
        super().__init__()
        channels = tuple(config.attribute_channels)
        self.crop_tower = _Tower(3, channels)
        self.context_tower = _Tower(4, tuple(config.context_channels))
        width = channels[-1] + config.context_channels[-1] + 64
        self.geometry = nn.Sequential(nn.Linear(NUM_GEOMETRY_FEATURES, 64), nn.ReLU(inplace=True))
        self.trunk = nn.Sequential(nn.Linear(width, 256), nn.ReLU(inplace=True), nn.Dropout(0.1))
        self.heads = nn.ModuleDict({a: nn.Linear(256, len(domain.DOMAINS[a])) for a in domain.ATTRIBUTES})
        self.offset = nn.Linear(256, 2)

    def forward(self, crops: torch.Tensor, contexts: torch.Tensor, geometry: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.cat([self.crop_tower((crops - 0.5) / 0.25), self.context_tower((contexts - 0.5) / 0.25),
                       self.geometry(geometry)], dim=1)
        h = self.trunk(h)
        out = {a: head(h) for a, head in self.heads.items()}
        out["offset"] = self.offset(h)
        return out


def crop_boxes(boxes: torch.Tensor, margin: float) -> torch.Tensor:
    """Square crop windows (K, 4) ``(x1, y1, x2, y2)``: each box's centre, side ``margin * max(w, h)``
    (a square window keeps the object's aspect ratio, which tells shapes apart)."""
    cx = (boxes[:, 0] + boxes[:, 2]) / 2
    cy = (boxes[:, 1] + boxes[:, 3]) / 2
    half = margin * torch.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]).clamp(min=4.0) / 2
    return torch.stack([cx - half, cy - half, cx + half, cy + half], dim=1)


def attribute_inputs(images: torch.Tensor | Sequence[torch.Tensor], contexts: torch.Tensor, image_index: torch.Tensor,
                     boxes: torch.Tensor, config: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Crops and context inputs of :class:`AttributeNet` for K boxes.

    Args:
        images: float (B, 3, H, W) in [0, 1], or a sequence of B float (3, H_b, W_b) images of their own
            sizes.
        contexts: float (B, 3, context_height, context_width), the same images downscaled
            (:func:`context_images`).
        image_index: long (K,), the image of each box.
        boxes: float (K, 4) ``(x1, y1, x2, y2)`` pixels of its image.

    Returns:
        crops (K, 3, crop_size, crop_size) and contexts (K, 4, context_height, context_width), on
        ``boxes``' device.
    """
    from torchvision.ops import roi_align

    windows = crop_boxes(boxes, config.crop_margin)
    ch, cw = config.context_height, config.context_width
    crops = boxes.new_empty((len(boxes), 3, config.crop_size, config.crop_size))
    mask = boxes.new_empty((len(boxes), ch, cw))
    for b in torch.unique(image_index).tolist():
        chosen = image_index == b
        image = images[b]
        rois = torch.cat([torch.zeros_like(windows[chosen][:, :1]), windows[chosen]], dim=1)
        crops[chosen] = roi_align(image[None], rois, output_size=config.crop_size, spatial_scale=1.0,
                                  sampling_ratio=2, aligned=True)
        H, W = image.shape[-2:]
        ys = (torch.arange(ch, dtype=boxes.dtype, device=boxes.device) + 0.5) * (H / ch)
        xs = (torch.arange(cw, dtype=boxes.dtype, device=boxes.device) + 0.5) * (W / cw)
        own = boxes[chosen]
        inside_y = (ys[None, :] >= own[:, 1:2]) & (ys[None, :] <= own[:, 3:4])
        inside_x = (xs[None, :] >= own[:, 0:1]) & (xs[None, :] <= own[:, 2:3])
        mask[chosen] = (inside_y[:, :, None] & inside_x[:, None, :]).to(boxes.dtype)
    return crops, torch.cat([contexts[image_index], mask[:, None]], dim=1)


def context_images(images: torch.Tensor, config: ModelConfig) -> torch.Tensor:
    """Full images (B, 3, H, W) downscaled (area averaging) to (B, 3, context_height, context_width)."""
    return nn.functional.interpolate(images, size=(config.context_height, config.context_width), mode="area")
