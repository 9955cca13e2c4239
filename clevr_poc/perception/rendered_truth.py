"""Ground truth of rendered CLEVR-POC images for training and evaluating perception (torch-free).

A rendered dataset folder (``python -m clevr_poc render``) holds, per image, a scene JSON with the
camera and, per object, its box, mask, visible pixels and 3-D centre
(:mod:`clevr_poc.rendering.render`). :func:`load_rendered` turns the scenes of one split whose image
exists into :class:`RenderedImage` records; objects that are not visible (``bbox`` null) are left out,
since no detector can see them.

The official release's scene JSONs have neither a camera nor boxes: their camera is chosen by the
camera source (:mod:`.cameras`; ``auto`` gives the official preset) and their objects have
``box=None`` (all of them visible: the official generator re-placed scenes until every object showed);
such images can be evaluated (objects matched by position) but not trained on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence


from clevr_poc import domain
from clevr_poc.dataset_reader import SPLIT_ALIASES
from clevr_poc.errors import FormatError
from clevr_poc.image_files import image_size
from clevr_poc.perception.cameras import check_camera_source, resolve_camera, scene_camera
from clevr_poc.rendering.geometry import Camera
from clevr_poc.scene import Scene

#: Scene kinds of a dataset folder: partial scenes (the questions' images) and complete scenes.
KINDS: tuple[str, ...] = ("incomplete", "complete")


@dataclass(frozen=True)
class ObjectTruth:
    """One visible object of a render.

    Attributes:
        box: ``(x1, y1, x2, y2)`` pixels (from the COCO box ``[x, y, w, h]`` of its visible mask), or None
            when the scene file has no boxes (the official release's).
        color, shape, size, material: attribute values.
        region: region id 0..3.
        centre: world ``(x, y)`` of its centre (``3d_coords``), world units.
        visible_pixels: area of its visible mask.
        index: its index in the scene's object list.
    """

    box: tuple[float, float, float, float] | None
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
        camera: the render's camera (the scene's own, or the preset the camera source chose), fitted to
            the image's size.
        objects: visible objects (scene order).
        scene: the scene as read (all objects, relationships, ``constraint_type_index``).
        width, height: the image's size in pixels.
    """

    image_path: Path
    scene_path: Path | None
    kind: str
    camera: Camera
    objects: tuple[ObjectTruth, ...]
    scene: Scene
    width: int = 0
    height: int = 0

    @property
    def annotated(self) -> bool:
        """Every object has a box (our renders; the official release's scenes have none)."""
        return all(o.box is not None for o in self.objects)

    @property
    def environment_id(self) -> int | None:
        return self.scene.environment_id


def _split_folder(root: Path, kind: str, split: str) -> Path | None:
    for name in SPLIT_ALIASES.get(split, (split,)):
        folder = root / kind / "scenes" / name
        if folder.is_dir():
            return folder
    return None


def image_truth(scene: Scene, image_path: str | os.PathLike[str], kind: str = "incomplete", *,
                camera_source: str = "from-scene", scene_path: str | os.PathLike[str] | None = None
                ) -> RenderedImage:
    """The :class:`RenderedImage` of a scene and its image file.

    Args:
        scene: the image's scene (as read from its JSON).
        image_path: the PNG (only its header is read here).
        kind: ``"incomplete"`` or ``"complete"``.
        camera_source: :data:`clevr_poc.perception.cameras.CAMERA_SOURCES`; ``from-scene`` (default)
            needs the camera our renderer writes.
        scene_path: the scene's file, for error messages.

    Raises:
        FormatError: no camera for ``from-scene``, an unreadable image, an object without ``3d_coords``
            or with a malformed ``bbox``.
    """
    source = scene_path if scene_path is not None else image_path
    width, height = image_size(image_path)
    if camera_source == "from-scene" and scene_camera(scene, source=source) is None:
        raise FormatError("the scene has no camera: render it first (python -m clevr_poc render), or choose a "
                          "camera preset", source=source, field="camera")
    camera = resolve_camera(width, height, scene=scene, camera_source=camera_source, source=source)
    has_boxes = any(obj.bbox is not None or obj.mask is not None for obj in scene.objects)
    objects = []
    for i, obj in enumerate(scene.objects):
        bbox = obj.bbox
        if has_boxes and bbox is None:
            continue  # not visible in the render
        box = None
        if bbox is not None:
            if not (len(bbox) == 4 and bbox[2] > 0 and bbox[3] > 0):
                raise FormatError("bbox must be [x, y, w, h] with w, h > 0", source=source,
                                  field=f"objects[{i}].bbox", value=bbox)
            x, y, w, h = (float(v) for v in bbox)
            box = (x, y, x + w, y + h)
        if obj.coords_3d is None or len(obj.coords_3d) < 2:
            raise FormatError("missing 3d_coords", source=source, field=f"objects[{i}].3d_coords")
        objects.append(ObjectTruth(box, obj.color, obj.shape, obj.size, obj.material, obj.region,
                                   (float(obj.coords_3d[0]), float(obj.coords_3d[1])),
                                   int(obj.visible_pixels or 0), i))
    return RenderedImage(Path(image_path), None if scene_path is None else Path(scene_path), kind, camera,
                         tuple(objects), scene, width, height)


def rendered_image(scene_path: str | os.PathLike[str], image_path: str | os.PathLike[str], kind: str = "incomplete",
                   *, camera_source: str = "from-scene") -> RenderedImage:
    """One :class:`RenderedImage` from a scene JSON and its PNG (:func:`image_truth`).

    Raises:
        FormatError: the scene has no ``camera`` (not rendered) and ``camera_source`` is ``from-scene``,
            or an object lacks ``3d_coords`` or has a malformed ``bbox``.
    """
    scene_path = Path(scene_path)
    return image_truth(Scene.from_file(scene_path), image_path, kind, camera_source=camera_source,
                       scene_path=scene_path)


def load_rendered(dataset: str | os.PathLike[str], split: str, *, kinds: Sequence[str] = ("incomplete",),
                  limit: int | None = None, camera_source: str = "from-scene") -> list[RenderedImage]:
    """The rendered images of one split of a dataset folder, sorted by kind then file name.

    Scenes whose image is not rendered yet are skipped (rendering is resumable; training can start on
    what exists); with ``camera_source="from-scene"`` (default) so are scenes without a camera (the
    renderer writes it with the image).

    Args:
        dataset: the dataset folder (``generate`` + ``render``).
        split: ``train``/``val``/``test`` (or the official names).
        kinds: scene kinds to read (:data:`KINDS`).
        limit: at most this many images per kind.
        camera_source: :data:`clevr_poc.perception.cameras.CAMERA_SOURCES`.

    Raises:
        FormatError: not a dataset folder, no such split, an unknown kind or camera source, or a malformed
            scene.
    """
    check_camera_source(camera_source)
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
            if not scene.image_filename or (camera_source == "from-scene" and scene.camera is None):
                continue
            image_path = images / Path(scene.image_filename).name
            if not image_path.is_file():
                continue
            out.append(image_truth(scene, image_path, kind, camera_source=camera_source, scene_path=scene_path))
            count += 1
    if not found_split:
        raise FormatError(f"no scenes for split {split!r} (kinds {list(kinds)})", source=root, field="split",
                          value=split)
    return out
