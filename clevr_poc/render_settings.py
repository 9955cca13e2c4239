"""How images are rendered: :class:`RenderSettings`, the one settings value of
:func:`clevr_poc.rendering.render_scene`, :func:`clevr_poc.rendering.batch_render.render_dataset` and its
tasks, recorded into each scene's ``render`` object (:class:`clevr_poc.scene_metadata.RenderInfo`).

No Blender, no numpy: every stage can hold one (the scene metadata sits below rendering).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Protocol

from clevr_poc.errors import RenderError

#: Default path-tracing samples per pixel (Cycles; with OpenImageDenoise). See docs/rendering.md
#: (``benchmarks/render.py --quality``): in the official style at 320 x 320, 8 samples + OIDN reach 47.8 dB
#: PSNR and SSIM 0.997 against the official 512 samples on 6 scenes for 1.8-2.1 CPU seconds per image
#: (47x less; about 1 s wall on 2 idle cores); 16 samples: 49.6 dB for 3.4 CPU s.
DEFAULT_SAMPLES = 8
#: Default engine (see docs/rendering.md for the measurements behind the choice).
DEFAULT_ENGINE = "cycles"
ENGINE_NAMES: tuple[str, ...] = ("cycles", "eevee")
#: Bound on ``relayout`` calls of :func:`~clevr_poc.rendering.render_scene` (CLEVR's layout: 100 tries).
DEFAULT_MAX_RELAYOUTS = 10
#: The default look (:data:`clevr_poc.rendering.styles.DEFAULT_STYLE`: the released images').
DEFAULT_STYLE_NAME = "official"


class NamedStyle(Protocol):
    """A look given as a value (:class:`clevr_poc.rendering.styles.RenderStyle`), known here by its name."""

    name: str


@dataclass(frozen=True)
class RenderSettings:
    """The settings of a render (everything but the per-image seed). Fields marked *(style)* default to the
    style's value when None.

    Attributes:
        style: ``"official"`` (default) or ``"ours"`` (:mod:`clevr_poc.rendering.styles`), or a
            :class:`~clevr_poc.rendering.styles.RenderStyle`.
        width, height: image size in pixels (*style*: official 320 x 320, ours 320 x 240).
        samples: samples per pixel (Cycles path tracing / EEVEE anti-aliasing), >= 1.
        engine: ``"cycles"`` (CPU path tracing) or ``"eevee"`` (rasteriser; needs OpenGL, very slow on a
            software OpenGL, see docs/rendering.md).
        denoise: OpenImageDenoise on the Cycles image.
        adaptive: Cycles adaptive sampling (noise threshold 0.02; ``samples`` is then a maximum). The
            official renders (Blender 2.78) had none: pass False (and ``denoise=False``, 512 samples) to
            reproduce their settings.
        camera_jitter, light_jitter: uniform jitter per coordinate, world units, >= 0 (*style*: official
            0 and 0, ours 0.5 and 1.0).
        colour_space: ``"linear"`` (``c / 255`` as linear values, official) or ``"srgb"`` (``c / 255``
            converted from sRGB, ours) (*style*).
        cone_lift: cones float this high above the floor (world units, >= 0; :mod:`clevr_poc.rendering.render`)
            (*style*: official 0.118, ours 0).
        assets: an official CLEVR(-POC) ``data/`` folder (``base_scene.blend``, ``shapes/``, ``materials/``):
            render with those files (:mod:`clevr_poc.rendering.assets`); their camera, lights and meshes
            then replace the style's.
        min_pixels: visibility threshold (default: :func:`clevr_poc.rendering.render.default_min_pixels`).
        max_relayouts: most ``relayout`` calls per image.
        threads: CPU threads for Blender (0: all).
        quiet: silence Blender's console output.
    """

    style: str | NamedStyle = DEFAULT_STYLE_NAME
    width: int | None = None
    height: int | None = None
    samples: int = DEFAULT_SAMPLES
    engine: str = DEFAULT_ENGINE
    denoise: bool = True
    adaptive: bool = True
    camera_jitter: float | None = None
    light_jitter: float | None = None
    colour_space: str | None = None
    cone_lift: float | None = None
    assets: str | None = None
    min_pixels: int | None = None
    max_relayouts: int = DEFAULT_MAX_RELAYOUTS
    threads: int = 0
    quiet: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.assets, os.PathLike):
            object.__setattr__(self, "assets", os.fspath(self.assets))

    def with_overrides(self, **overrides: object) -> "RenderSettings":
        """A copy with the given fields replaced (``render_scene(..., samples=4)`` style keywords).

        Raises:
            RenderError: a keyword that is not a setting.
        """
        if not overrides:
            return self
        unknown = sorted(set(overrides) - {f.name for f in fields(self)})
        if unknown:
            raise RenderError(f"unknown render setting(s) {unknown}; expected some of "
                              f"{[f.name for f in fields(self)]}")
        return replace(self, **overrides)  # type: ignore[arg-type]


__all__ = ["DEFAULT_ENGINE", "DEFAULT_MAX_RELAYOUTS", "DEFAULT_SAMPLES", "DEFAULT_STYLE_NAME", "ENGINE_NAMES",
           "NamedStyle", "RenderSettings"]
