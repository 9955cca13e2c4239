"""Which camera an image was taken with, when the data says nothing: named presets and the rule that picks one.

Perception turns a box into a ground position through the camera (:mod:`.box_geometry`), so it must know the
camera of every image. Our renderer stores it in the scene JSON (``"camera"``); the official CLEVR-POC
release does not (its scene JSON has ``directions`` but no camera matrix; ``OFFICIAL_RENDER.md``): its
images were all taken by one fixed camera, the ``official`` preset of
:data:`clevr_poc.camera.CAMERA_PRESETS` (location (10.0, -6.50764, 5.34367), 21 mm lens on a
32 mm sensor, aimed at the origin; 320 x 320).

Camera sources (``--camera`` of the command lines, ``camera_source=`` of the Python API):

* ``auto`` (default): the scene's own camera when it has one, else the ``official`` preset;
* ``from-scene``: the scene's own camera; an error when it has none;
* ``official``, ``ours``: that preset, whatever the scene says.

A preset is built at the image's own size (Blender's sensor fit AUTO: ``fx = fy = focal / sensor *
max(width, height)``, principal point at the centre). A camera that comes with the data but was made for
another image size is scaled to the image (:func:`fit_camera`: ``K`` scaled per axis), which is exact for
a resized image of the same aspect ratio.
"""

from __future__ import annotations

import os
from pathlib import Path
from enum import StrEnum
from typing import Mapping, TypeAlias

from clevr_poc.errors import FormatError
from clevr_poc.camera import CAMERA_PRESETS, Camera, camera_preset
from clevr_poc.scene import Scene

#: A camera as the data gives it: a :class:`Camera`, its JSON (``{"K", "world_to_camera", "image_size"}``) or a
#: preset name (:data:`~clevr_poc.camera.CAMERA_PRESETS`).
CameraSpec: TypeAlias = "Camera | Mapping[str, object] | str"
#: A scene that may carry a camera: a :class:`Scene` or its JSON mapping.
SceneLike: TypeAlias = "Scene | Mapping[str, object]"


class CameraSource(StrEnum):
    """Where the camera of an image comes from (module doc); the values are those of ``--camera``."""

    AUTO = "auto"
    FROM_SCENE = "from-scene"
    OFFICIAL = "official"
    OURS = "ours"


#: The values of :class:`CameraSource` (the presets' names among them), in ``--camera`` order.
CAMERA_SOURCES: tuple[str, ...] = tuple(source.value for source in CameraSource)
DEFAULT_CAMERA_SOURCE = CameraSource.AUTO
#: The preset of images that come without a camera (the official release's).
FALLBACK_PRESET = "official"


def check_camera_source(source: CameraSource | str) -> CameraSource:
    """``source`` as a :class:`CameraSource` (a member or its value); :class:`FormatError` otherwise."""
    try:
        return CameraSource(source)
    except ValueError:
        raise FormatError(f"unknown camera source; expected one of {list(CAMERA_SOURCES)}", field="camera",
                          value=source) from None


def as_camera(camera: object, *, source: object = None) -> Camera:
    """A :class:`Camera` from a Camera or its JSON (``{"K", "world_to_camera", "image_size"}``).

    Raises:
        FormatError: another type, or a malformed camera JSON.
    """
    if isinstance(camera, Camera):
        return camera
    if isinstance(camera, Mapping):
        return Camera.from_json(dict(camera), source=source)
    raise FormatError("a camera is a clevr_poc.camera.Camera, its JSON or a preset name "
                      f"({', '.join(sorted(CAMERA_PRESETS))})", source=source, field="camera",
                      value=type(camera).__name__)


def scene_camera(scene: SceneLike | None, *, source: object = None) -> Camera | None:
    """The camera a scene file carries (``"camera"``, written by ``python -m clevr_poc render``), or None.

    ``scene``: a :class:`~clevr_poc.scene.Scene` (its :attr:`~clevr_poc.scene.Scene.camera`, read with the
    scene) or its JSON mapping.

    Raises:
        FormatError: the scene JSON has a camera but it is malformed.
    """
    if isinstance(scene, Scene):
        return scene.camera
    if not isinstance(scene, Mapping) or scene.get("camera") is None:
        return None
    return as_camera(scene["camera"], source=source)


def fit_camera(camera: Camera, width: int, height: int, *, source: object = None) -> Camera:
    """``camera`` for an image of ``width`` x ``height`` pixels: unchanged at its own size, else its
    intrinsics scaled by ``width / camera.width`` (row 0) and ``height / camera.height`` (row 1).

    Raises:
        FormatError: the aspect ratios differ by more than 1 % (a crop, not a resize: the scaled camera
            would be wrong).
    """
    if (camera.width, camera.height) == (width, height):
        return camera
    sx, sy = width / camera.width, height / camera.height
    if abs(sx / sy - 1.0) > 0.01:
        raise FormatError(f"the camera was made for {camera.width}x{camera.height} images but the image is "
                          f"{width}x{height} (another aspect ratio); pass the image's own camera or a preset "
                          f"({', '.join(sorted(CAMERA_PRESETS))})", source=source, field="camera.image_size",
                          value=[camera.width, camera.height])
    K = camera.K.copy()
    K[0] *= sx
    K[1] *= sy
    return Camera(tuple(map(tuple, K)), camera.world_to_camera, int(width), int(height))


def camera_spec(scene: SceneLike | None = None, camera_source: CameraSource | str = DEFAULT_CAMERA_SOURCE, *, source: object = None
                ) -> Camera | str:
    """The camera a scene's image was taken with, before its size is known: the scene's own
    :class:`Camera`, or a preset name (module doc; what ``Perception(image, camera=...)`` accepts).

    Raises:
        FormatError: an unknown source, ``from-scene`` without a camera in the scene, or a malformed one.
    """
    camera_source = check_camera_source(camera_source)
    if camera_source.value in CAMERA_PRESETS:
        return camera_source.value
    found = scene_camera(scene, source=source) if scene is not None else None
    if found is not None:
        return found
    if camera_source is CameraSource.FROM_SCENE:
        raise FormatError("the scene has no camera (the official release's scenes carry none): use camera "
                          f"source 'auto' or a preset ({', '.join(sorted(CAMERA_PRESETS))})", source=source,
                          field="camera")
    return FALLBACK_PRESET


def resolve_camera(width: int, height: int, *, camera: CameraSpec | None = None, scene: SceneLike | None = None,
                   camera_source: CameraSource | str = DEFAULT_CAMERA_SOURCE, source: object = None) -> Camera:
    """The camera of an image of ``width`` x ``height`` pixels.

    Args:
        width, height: the image's size in pixels.
        camera: an explicit camera (a :class:`Camera`, its JSON, or a preset name); it wins over
            ``camera_source``.
        scene: the image's scene (a :class:`~clevr_poc.scene.Scene` or its JSON), whose ``"camera"`` is
            used by the ``auto`` and ``from-scene`` sources.
        camera_source: one of :data:`CAMERA_SOURCES` (module doc).
        source: where the scene came from, for error messages.

    Raises:
        FormatError: an unknown source or preset name, ``from-scene`` without a camera in the scene, a
            malformed camera, or a camera of another aspect ratio (:func:`fit_camera`).
    """
    spec = camera_spec(scene, camera_source, source=source) if camera is None else camera
    if isinstance(spec, str):
        return camera_preset(spec, width, height)
    return fit_camera(as_camera(spec, source=source), width, height, source=source)


def camera_argument(camera: object, camera_source: CameraSource | str = DEFAULT_CAMERA_SOURCE) -> Camera | str:
    """The camera an image was rendered with: a :class:`~clevr_poc.camera.Camera`, or a preset
    name that perception builds at the image's size (:mod:`clevr_poc.perception.cameras`).

    Accepts a Camera or its JSON (``{"K", "world_to_camera", "image_size"}``), which are used as they are;
    a preset name (``"official"``, ``"ours"``); a scene (a :class:`~clevr_poc.scene.Scene`, its JSON mapping, or the path of
    its JSON file), or None, which follow ``camera_source``: ``auto`` = the scene's ``"camera"`` (written by
    ``python -m clevr_poc render``) when it has one, else the official CLEVR-POC camera (the release's
    scene files carry none); ``from-scene`` = the scene's or an error; ``official`` / ``ours`` = that preset.

    Raises:
        FormatError: another type, an unknown source, ``from-scene`` without a camera, a malformed camera.
    """
    from clevr_poc._io import read_json

    if isinstance(camera, Camera):
        return camera
    if isinstance(camera, str) and camera in CAMERA_PRESETS:
        return camera
    source: object = "camera"
    if isinstance(camera, (str, os.PathLike)):
        source = Path(camera)
        camera = read_json(source)
    elif isinstance(camera, Scene):  # its camera (Scene.camera) or the camera_source's choice
        return camera_spec(camera, camera_source, source=camera.image_filename or "scene")
    if isinstance(camera, Mapping) and "K" in camera and "world_to_camera" in camera:
        return Camera.from_json(dict(camera), source=source)
    if camera is None or isinstance(camera, Mapping):
        return camera_spec(camera, camera_source, source=source)
    raise FormatError("a camera is a Camera, its JSON, a preset name, or a scene (Scene, JSON or file path)",
                      field="camera", value=type(camera).__name__)
