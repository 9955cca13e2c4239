"""Ground truth of rendered CLEVR-POC images for training and evaluating perception (torch-free).

A rendered dataset folder (``python -m clevr_poc render``) holds, per image, a scene JSON with the
camera and, per object, its box, mask, visible pixels and 3-D centre
(:mod:`clevr_poc.rendering.render`). :func:`load_rendered` turns the scenes of one split whose image
exists into :class:`RenderedImage` records; objects that are not visible (``bbox`` null) are left out,
since no detector can see them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.dataset import SPLIT_ALIASES
from clevr_poc.errors import FormatError
from clevr_poc.rendering.geometry import Camera
from clevr_poc.scene import Scene

#: Scene kinds of a dataset folder: partial scenes (the questions' images) and complete scenes.
KINDS: tuple[str, ...] = ("incomplete", "complete")


@dataclass(frozen=True)
class ObjectTruth:
    """One visible object of a render.

    Attributes:
        box: ``(x1, y1, x2, y2)`` pixels (from the COCO box ``[x, y, w, h]`` of its visible mask).
        color, shape, size, material: attribute values.
        region: region id 0..3.
        centre: world ``(x, y)`` of its centre (``3d_coords``), world units.
        visible_pixels: area of its visible mask.
        index: its index in the scene's object list.
    """

    box: tuple[float, float, float, float]
    color: str
    shape: str
    size: str
    material: str
    region: int
    centre: tuple[float, float]
    visible_pixels: int
    index: int

    def attribute(self, name: str) -> str:
        return getattr(self, name)

    def label(self, name: str) -> int:
        """Index of the value of attribute ``name`` in :data:`clevr_poc.domain.DOMAINS` ``[name]``."""
        return domain.DOMAINS[name].index(getattr(self, name))


@dataclass(frozen=True)
class RenderedImage:
    """A rendered image with its ground truth.

    Attributes:
        image_path: the PNG.
        scene_path: its scene JSON.
        kind: ``"incomplete"`` or ``"complete"``.
        camera: the render's camera.
        objects: visible objects (scene order).
        scene: the scene as read (all objects, relationships, ``constraint_type_index``).
    """

    image_path: Path
    scene_path: Path
    kind: str
    camera: Camera
    objects: tuple[ObjectTruth, ...]
    scene: Scene

    @property
    def environment_id(self) -> int | None:
        value = self.scene.extra.get("constraint_type_index")
        return int(value) if value is not None else None


def _split_folder(root: Path, kind: str, split: str) -> Path | None:
    for name in SPLIT_ALIASES.get(split, (split,)):
        folder = root / kind / "scenes" / name
        if folder.is_dir():
            return folder
    return None


def rendered_image(scene_path: str | os.PathLike[str], image_path: str | os.PathLike[str], kind: str = "incomplete"
                   ) -> RenderedImage:
    """One :class:`RenderedImage` from a scene JSON written by the renderer and its PNG.

    Raises:
        FormatError: the scene has no ``camera`` (not rendered), or an object lacks ``3d_coords`` or has a
            malformed ``bbox``.
    """
    scene_path = Path(scene_path)
    scene = Scene.from_file(scene_path)
    if "camera" not in scene.extra:
        raise FormatError("the scene has no camera: render it first (python -m clevr_poc render)",
                          source=scene_path, field="camera")
    camera = Camera.from_json(scene.extra["camera"], source=scene_path)
    objects = []
    for i, obj in enumerate(scene.objects):
        bbox = obj.extra.get("bbox")
        if bbox is None:
            continue
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, (int, float)) for v in bbox)
                and bbox[2] > 0 and bbox[3] > 0):
            raise FormatError("bbox must be [x, y, w, h] with w, h > 0", source=scene_path,
                              field=f"objects[{i}].bbox", value=bbox)
        if obj.coords_3d is None or len(obj.coords_3d) < 2:
            raise FormatError("missing 3d_coords", source=scene_path, field=f"objects[{i}].3d_coords")
        x, y, w, h = (float(v) for v in bbox)
        objects.append(ObjectTruth((x, y, x + w, y + h), obj.color, obj.shape, obj.size, obj.material, obj.region,
                                   (float(obj.coords_3d[0]), float(obj.coords_3d[1])),
                                   int(obj.extra.get("visible_pixels", 0)), i))
    return RenderedImage(Path(image_path), scene_path, kind, camera, tuple(objects), scene)


def load_rendered(dataset: str | os.PathLike[str], split: str, *, kinds: Sequence[str] = ("incomplete",),
                  limit: int | None = None) -> list[RenderedImage]:
    """The rendered images of one split of a dataset folder, sorted by kind then file name.

    Scenes whose image is not rendered yet are skipped (rendering is resumable; training can start on
    what exists).

    Args:
        dataset: the dataset folder (``generate`` + ``render``).
        split: ``train``/``val``/``test`` (or the official names).
        kinds: scene kinds to read (:data:`KINDS`).
        limit: at most this many images per kind.

    Raises:
        FormatError: not a dataset folder, no such split, an unknown kind, or a malformed scene.
    """
    root = Path(dataset)
    if not root.is_dir():
        raise FormatError("dataset folder not found", source=root)
    out: list[RenderedImage] = []
    found_split = False
    for kind in kinds:
        if kind not in KINDS:
            raise FormatError(f"unknown scene kind; expected one of {list(KINDS)}", field="kind", value=kind)
        folder = _split_folder(root, kind, split)
        if folder is None:
            continue
        found_split = True
        images = folder.parent.parent / "images" / folder.name
        count = 0
        for scene_path in sorted(folder.glob("*.json")):
            if limit is not None and count >= limit:
                break
            scene = Scene.from_file(scene_path)
            if not scene.image_filename or "camera" not in scene.extra:
                continue
            image_path = images / Path(scene.image_filename).name
            if not image_path.is_file():
                continue
            out.append(rendered_image(scene_path, image_path, kind))
            count += 1
    if not found_split:
        raise FormatError(f"no scenes for split {split!r} (kinds {list(kinds)})", source=root, field="split",
                          value=split)
    return out


def load_image(path: str | os.PathLike[str]) -> np.ndarray:
    """uint8 (H, W, 3) RGB array of an image file (alpha dropped).

    Raises:
        FormatError: missing or unreadable file.
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
    except FileNotFoundError:
        raise FormatError("image file not found", source=path) from None
    except (UnidentifiedImageError, OSError) as exc:
        raise FormatError(f"cannot read the image ({exc.__class__.__name__})", source=path) from None
