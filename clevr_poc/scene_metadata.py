"""Typed metadata a scene carries besides its objects: how its image was made, how it was generated,
how it was perceived. One home for what used to travel in ``Scene.extra``.

=====================  ==================================  ==============================================
scene JSON key          type                                written by
=====================  ==================================  ==============================================
``camera``, ``render``  :class:`ImageInfo` (``Scene.image``)  ``render`` (:func:`clevr_poc.rendering.render_scene`),
                                                            perception (camera only)
``generation``          :class:`GenerationCounts`           ``generate`` (complete scenes only)
``perception``          :class:`PerceptionInfo`             :class:`clevr_poc.perception.perceiver.Perception`
=====================  ==================================  ==============================================

``constraint_type_index`` (the environment id) is ``Scene.environment_id``; per-object ground truth
(``rotation``, ``mask``, ``bbox``, ...) are fields of :class:`~clevr_poc.scene.SceneObject`.

Files round-trip byte for byte: a value read from a file writes back exactly the JSON it was read from
(kept privately; a value built in code, or changed with :func:`dataclasses.replace`, writes its fields in
the order the library has always written them). Fields are checked for their JSON type on reading
(:class:`~clevr_poc.errors.FormatError` naming the field); unknown keys inside these objects are kept.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from clevr_poc.camera import Camera
from clevr_poc.errors import FormatError
from clevr_poc.render_settings import RenderSettings


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _remember(value: Any, data: Mapping[str, Any]) -> Any:
    """``value`` with a private verbatim copy of the JSON it was read from (see the module doc)."""
    object.__setattr__(value, "_json", copy.deepcopy(dict(data)))
    return value


# ---------------------------------------------------------------------- render settings
#: JSON types of :class:`RenderInfo` fields: (check, what the error says).
_RENDER_TYPES: dict[str, tuple[Any, str]] = {
    "engine": (lambda v: isinstance(v, str), "a string"),
    "samples": (_count, "a count"), "denoise": (lambda v: isinstance(v, bool), "true or false"),
    "adaptive": (lambda v: isinstance(v, bool), "true or false"),
    "seed": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "width": (_count, "a count"), "height": (_count, "a count"),
    "lights": (lambda v: isinstance(v, Mapping), "an object (light name -> [x, y, z])"),
    "style": (lambda v: isinstance(v, str), "a string"), "colour_space": (lambda v: isinstance(v, str), "a string"),
    "camera_jitter": (_number, "a number"), "light_jitter": (_number, "a number"),
    "cone_lift": (_number, "a number"), "assets": (lambda v: v is None or isinstance(v, str), "a path or null"),
}


@dataclass(frozen=True)
class RenderInfo:
    """How an image was rendered: the scene JSON's ``render`` object (:mod:`clevr_poc.rendering.render`).

    Attributes:
        engine: ``"cycles"`` or ``"eevee"``. samples: samples per pixel (>= 1). denoise, adaptive:
            Cycles denoising / adaptive sampling (None: not recorded, files older than the setting).
        seed: the render seed (camera and light jitter). width, height: image size in pixels.
        lights: light name -> position [x, y, z] (world units, rounded to 6 decimals).
        style: the look (``"official"``, ``"ours"``), None for files of the ``ours`` look, which record
            no style (nor the five fields below).
        colour_space, camera_jitter, light_jitter, cone_lift: the style's settings (world units).
        assets: the official ``data/`` folder rendered with, or None (recorded with ``style``).
    """

    engine: str
    samples: int
    seed: int
    width: int
    height: int
    lights: Mapping[str, Any] = field(default_factory=dict)
    denoise: bool | None = None
    adaptive: bool | None = None
    style: str | None = None
    colour_space: str | None = None
    camera_jitter: float | None = None
    light_jitter: float | None = None
    cone_lift: float | None = None
    assets: str | None = None

    #: JSON key order (the renderer's).
    _ORDER = ("engine", "samples", "denoise", "adaptive", "seed", "width", "height", "lights")
    _STYLE_ORDER = ("style", "colour_space", "camera_jitter", "light_jitter", "cone_lift", "assets")

    @classmethod
    def of(cls, settings: RenderSettings, seed: int, lights: Mapping[str, Sequence[float]], *,
           with_style: bool = True) -> "RenderInfo":
        """The record of a render with ``settings`` as used (style name, size, jitters, colour space and
        cone lift resolved; ``denoise`` / ``adaptive`` as they took effect), ``seed`` and the ``lights``
        positions (rounded to 6 decimals); ``with_style=False`` records no style (the ``ours`` look's files).
        """
        info = cls(engine=settings.engine, samples=settings.samples, denoise=settings.denoise,
                   adaptive=settings.adaptive, seed=seed, width=settings.width, height=settings.height,
                   lights={k: [round(c, 6) for c in v] for k, v in lights.items()})
        if not with_style:
            return info
        style = settings.style if isinstance(settings.style, str) else settings.style.name
        return replace(info, style=style, colour_space=settings.colour_space, camera_jitter=settings.camera_jitter,
                       light_jitter=settings.light_jitter, cone_lift=settings.cone_lift, assets=settings.assets)

    @property
    def settings(self) -> RenderSettings:
        """The :class:`~clevr_poc.render_settings.RenderSettings` that make this image again (with
        :attr:`seed`); what the file does not record (an ``ours`` file's style fields) is the style's default."""
        defaults = RenderSettings()
        return RenderSettings(
            style=self.style or "ours", width=self.width, height=self.height, samples=self.samples,
            engine=self.engine, denoise=defaults.denoise if self.denoise is None else self.denoise,
            adaptive=defaults.adaptive if self.adaptive is None else self.adaptive,
            camera_jitter=self.camera_jitter, light_jitter=self.light_jitter, colour_space=self.colour_space,
            cone_lift=self.cone_lift, assets=self.assets)

    def to_json(self) -> dict[str, Any]:
        """The ``render`` object (exactly as read, for a value read from a file)."""
        if getattr(self, "_json", None) is not None:
            return copy.deepcopy(self._json)
        data = {k: getattr(self, k) for k in self._ORDER if getattr(self, k) is not None}
        data["lights"] = {k: list(v) for k, v in self.lights.items()}
        if self.style is not None:
            data.update({k: getattr(self, k) for k in self._STYLE_ORDER})
        return data

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "RenderInfo":
        """Read a ``render`` object; raises :class:`FormatError` naming the field."""
        if not isinstance(data, Mapping):
            raise FormatError("must be an object", source=source, field="render", value=type(data).__name__)
        for key in ("engine", "samples", "seed", "width", "height"):
            if key not in data:
                raise FormatError("missing key", source=source, field=f"render.{key}")
        for key, (check, what) in _RENDER_TYPES.items():
            if key in data and not check(data[key]):
                raise FormatError(f"must be {what}", source=source, field=f"render.{key}", value=data[key])
        known = {f.name for f in fields(cls)}
        return _remember(cls(**{k: v for k, v in data.items() if k in known}), data)


@dataclass(frozen=True)
class ImageInfo:
    """The camera and render settings of a scene's image (scene JSON ``camera`` and ``render``).

    Attributes:
        camera: the camera the image was taken with (:class:`~clevr_poc.camera.Camera`), or None.
        render: how it was rendered, or None (a perceived scene has a camera but no render settings).
    """

    camera: Camera | None = None
    render: RenderInfo | None = None

    @property
    def width(self) -> int | None:
        """Image width in pixels (the camera's, else the render settings'), or None."""
        return self.camera.width if self.camera is not None else (self.render.width if self.render else None)

    @property
    def height(self) -> int | None:
        """Image height in pixels (the camera's, else the render settings'), or None."""
        return self.camera.height if self.camera is not None else (self.render.height if self.render else None)

    def to_json_items(self) -> dict[str, Any]:
        """The scene JSON's ``camera`` and ``render`` keys (those present; exactly as read from a file)."""
        if getattr(self, "_json", None) is not None:
            return copy.deepcopy(self._json)
        data: dict[str, Any] = {}
        if self.camera is not None:
            data["camera"] = self.camera.to_json()
        if self.render is not None:
            data["render"] = self.render.to_json()
        return data

    @classmethod
    def from_json_items(cls, data: Mapping[str, Any], *, source: object = None) -> "ImageInfo | None":
        """From a scene JSON document's ``camera`` and ``render`` keys (None when it has neither; a
        ``null`` value reads as absent and is written back as ``null``).

        Raises:
            FormatError: a malformed camera (``camera.K``, ...) or render object, naming the field.
        """
        present = {k: data[k] for k in ("camera", "render") if k in data}
        if not present:
            return None
        camera = present.get("camera")
        render = present.get("render")
        info = cls(None if camera is None else Camera.from_json(camera, source=source),
                   None if render is None else RenderInfo.from_json(render, source=source))
        return _remember(info, present)


# ---------------------------------------------------------------------- generation counters
@dataclass(frozen=True)
class GenerationCounts:
    """What generating one example cost: the ``generation`` object of a complete scene file
    (deterministic counts; summed into ``stats.json`` by the generator).

    Attributes:
        attempts: scene samples drawn. placement_failures: samples whose objects could not be placed.
        layouts_checked: layouts checked for visibility from the render camera; visibility_rejections:
            those rejected; visibility_occluded, visibility_too_small: offending objects by reason;
            visibility_rejected_complete, visibility_rejected_partial: rejections by image;
            visibility_resamples: samples abandoned after too many rejected layouts.
    """

    attempts: int = 0
    placement_failures: int = 0
    layouts_checked: int = 0
    visibility_rejections: int = 0
    visibility_occluded: int = 0
    visibility_too_small: int = 0
    visibility_rejected_complete: int = 0
    visibility_rejected_partial: int = 0
    visibility_resamples: int = 0

    def to_json(self) -> dict[str, int]:
        """The ``generation`` object (exactly as read, for a value read from a file)."""
        if getattr(self, "_json", None) is not None:
            return copy.deepcopy(self._json)
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "GenerationCounts":
        """Read a ``generation`` object (missing counters are 0); raises :class:`FormatError` naming the
        field for a value that is not a count."""
        if not isinstance(data, Mapping):
            raise FormatError("must be an object", source=source, field="generation", value=type(data).__name__)
        values = {}
        for f in fields(cls):
            value = data.get(f.name, 0)
            if not _count(value):
                raise FormatError("expected a count", source=source, field=f"generation.{f.name}", value=value)
            values[f.name] = value
        return _remember(cls(**values), data)


# ---------------------------------------------------------------------- perception
@dataclass(frozen=True)
class PerceptionInfo:
    """How a scene was perceived (:class:`clevr_poc.perception.perceiver.Perception`; scene JSON
    ``perception``).

    Attributes:
        decoding: ``"argmax"``, ``"optimal"``, ``"interrupted"``, ...
            (:class:`~clevr_poc.perception.decoding.DecodedScene` ``status``).
        cost: the decoding objective (integer sum of scaled -log probabilities), None for argmax.
        score_threshold, candidate_threshold: detection scores in [0, 1] (the Perception's settings).
        detections: detector candidates seen.
        environment: id of the environment decoded against, or None (argmax decoding).
        relations_used: whether relations between detections took part, or None (argmax decoding).
    """

    decoding: str
    cost: int | None = None
    score_threshold: float | None = None
    candidate_threshold: float | None = None
    detections: int | None = None
    environment: int | None = None
    relations_used: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``perception`` object (exactly as read, for a value read from a file)."""
        if getattr(self, "_json", None) is not None:
            return copy.deepcopy(self._json)
        data = {"decoding": self.decoding, "cost": self.cost, "score_threshold": self.score_threshold,
                "candidate_threshold": self.candidate_threshold, "detections": self.detections}
        if self.environment is not None:
            data["environment"] = self.environment
            data["relations_used"] = self.relations_used
        return data

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "PerceptionInfo":
        """Read a ``perception`` object; raises :class:`FormatError` naming the field."""
        if not isinstance(data, Mapping) or not isinstance(data.get("decoding"), str):
            raise FormatError("must be an object with a 'decoding' string", source=source, field="perception",
                              value=data)
        known = {f.name for f in fields(cls)}
        return _remember(cls(**{k: v for k, v in data.items() if k in known}), data)


__all__ = ["GenerationCounts", "ImageInfo", "PerceptionInfo", "RenderInfo"]
