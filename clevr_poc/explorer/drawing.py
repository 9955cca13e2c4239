"""Draw a scene's objects on its image: a box (``bbox``, COCO ``x, y, w, h`` pixels) or, without one, a
dot at ``pixel_coords``, labelled with the object's index; :func:`scene_lines` lists what each index is
(size, color, material, shape, region) beside the image, where long labels do not overlap."""

from __future__ import annotations

from typing import Any

import numpy as np

from clevr_poc.scene import Scene

#: Box colours (RGB): perceived objects yellow, gold objects cyan, both readable on the grey CLEVR floor.
PERCEIVED_RGB, GOLD_RGB = (255, 215, 0), (0, 230, 255)


def object_label(index: int, obj: Any) -> str:
    """``"2: small red rubber sphere, region 0"``."""
    return f"{index}: {obj.size} {obj.color} {obj.material} {obj.shape}, region {obj.region}"


def scene_lines(scene: Scene | None) -> list[str]:
    """One :func:`object_label` per object (``["(no scene)"]`` for None, ``["(no objects)"]`` when empty)."""
    if scene is None:
        return ["(no scene)"]
    return [object_label(i, o) for i, o in enumerate(scene.objects)] or ["(no objects)"]


def draw_scene(image: np.ndarray, scene: Scene | None, rgb: tuple[int, int, int] = PERCEIVED_RGB) -> np.ndarray:
    """A copy of ``image`` (uint8, (H, W, 3)) with ``scene``'s objects drawn; the image as it is for None.

    Objects without a box or pixel position are listed by :func:`scene_lines` only.
    """
    from PIL import Image, ImageDraw

    picture = Image.fromarray(np.asarray(image, dtype=np.uint8)).convert("RGB")
    if scene is None:
        return np.asarray(picture)
    pen = ImageDraw.Draw(picture)
    for i, obj in enumerate(scene.objects):
        if obj.bbox is not None:
            x, y, w, h = obj.bbox
            pen.rectangle([x, y, x + w, y + h], outline=rgb, width=2)
            anchor = (x + 2, max(0.0, y - 11))
        elif obj.pixel_coords is not None:
            u, v = obj.pixel_coords[:2]
            pen.ellipse([u - 4, v - 4, u + 4, v + 4], outline=rgb, width=2)
            anchor = (u + 6, v - 6)
        else:
            continue
        pen.text(anchor, str(i), fill=rgb)
    return np.asarray(picture)
