"""The render manifest: the settings that decide an image's pixels, kept beside the images so that a
resumed ``render`` cannot silently mix looks.

``DIR/<kind>/images/render.json`` (one per scene kind, ``incomplete`` and ``complete``; written
atomically by :func:`clevr_poc._io.atomic_write_json`) records the *resolved* settings of
:class:`RenderManifest`: style, image size, samples, engine, denoiser and adaptive sampling as they took
effect, colour space, camera and light jitter, cone lift, the official asset files (folder and SHA-256 of
their bytes), and the dataset seed from which each image's seed is derived
(:func:`clevr_poc.rendering.batch_render.image_seed`). Settings that do not change the pixels (workers,
threads, executor, ``min_pixels``, which only decides what is *reported*) are not recorded.

On resume :func:`check_render_folders` compares the folder's manifest with the asked settings: equal ->
resume; different -> :class:`RenderSettingsError` (one line naming the folder and each differing setting),
before anything is rendered. A folder rendered before manifests were kept (images, no ``render.json``)
cannot be checked: it is resumed as asked and reported as *unchecked* (the commands print a warning).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from clevr_poc.errors import FormatError, RenderError
from clevr_poc.render_settings import RenderSettings

#: File name of the manifest inside ``DIR/<kind>/images/``.
MANIFEST_NAME = "render.json"
#: Version of the manifest's layout.
FORMAT_VERSION = 1
#: How each image's seed follows from the recorded ``seed`` (:func:`clevr_poc.rendering.batch_render.image_seed`).
SEED_RULE = "sha256(seed, split, image file name)[:4]"
#: Fields recorded but not compared: the asset folder's place (its files' digest is compared).
_NOT_COMPARED = frozenset({"assets"})


class RenderSettingsError(RenderError):
    """A folder holds images rendered with other settings than those asked (:func:`check_render_folders`).

    Attributes:
        folder: the images folder (``DIR/<kind>/images``).
        differences: (setting, folder's value, asked value) for each differing setting.
    """

    def __init__(self, folder: Path, differences: Sequence[tuple[str, object, object]], *,
                 advice: str = "use --overwrite to re-render or another folder"):
        self.folder = folder
        self.differences = tuple(differences)
        each = "; ".join(f"{name} {_show(old)}, asked for {_show(new)}" for name, old, new in self.differences)
        super().__init__(f"{folder} was rendered with {each}; {advice}")


def _show(value: object) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def assets_digest(directory: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) over the official asset files of ``directory`` (:func:`clevr_poc.rendering.assets.find_assets`):
    each file's path relative to the folder, then its bytes, in a fixed order. Raises AssetsError like
    :func:`~clevr_poc.rendering.assets.find_assets`."""
    from clevr_poc.rendering.assets import find_assets

    files = find_assets(directory)
    digest = hashlib.sha256()
    for path in (files.base_scene, *(files.shapes[k] for k in sorted(files.shapes)),
                 *(files.materials[k] for k in sorted(files.materials))):
        digest.update(path.relative_to(files.root).as_posix().encode() + b"\x00")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class RenderManifest:
    """The resolved settings that decide the pixels of a folder's images (module doc).

    Attributes:
        style: the look's name (``"official"``, ``"ours"``). width, height: pixels.
        samples: samples per pixel. engine: ``"cycles"`` or ``"eevee"``.
        denoise, adaptive: as they took effect (False with EEVEE).
        colour_space: ``"linear"`` or ``"srgb"``. camera_jitter, light_jitter, cone_lift: world units.
        assets: the official ``data/`` folder (absolute) or None; assets_sha256: :func:`assets_digest` of it.
        seed: the dataset seed each image's seed is derived from (:data:`SEED_RULE`).
    """

    style: str
    width: int
    height: int
    samples: int
    engine: str
    denoise: bool
    adaptive: bool
    colour_space: str
    camera_jitter: float
    light_jitter: float
    cone_lift: float
    assets: str | None
    assets_sha256: str | None
    seed: int

    @classmethod
    def of(cls, settings: RenderSettings, seed: int) -> "RenderManifest":
        """The manifest of a render with ``settings`` (style defaults resolved as
        :func:`clevr_poc.rendering.render.render_scene` resolves them) and dataset seed ``seed``.

        Raises:
            FormatError: unknown style or colour space. AssetsError: a bad ``assets`` folder.
        """
        from clevr_poc.rendering.styles import resolve_look

        look = resolve_look(settings)
        cycles = settings.engine == "cycles"
        assets = None if settings.assets is None else str(Path(settings.assets).resolve())
        return cls(
            style=look.style.name, width=look.width, height=look.height, samples=settings.samples,
            engine=settings.engine, denoise=bool(settings.denoise and cycles),
            adaptive=bool(settings.adaptive and cycles), colour_space=look.style.colour_space,
            camera_jitter=float(look.camera_jitter), light_jitter=float(look.light_jitter),
            cone_lift=float(look.cone_lift),
            assets=assets, assets_sha256=None if assets is None else assets_digest(assets), seed=seed)

    def to_json(self) -> dict[str, Any]:
        """The manifest file's object: ``format_version``, the fields, then ``seed_rule``."""
        return {"format_version": FORMAT_VERSION, **asdict(self), "seed_rule": SEED_RULE}

    @classmethod
    def from_json(cls, data: Any, *, source: object = None) -> "RenderManifest":
        """Read :meth:`to_json`'s object.

        Raises:
            FormatError: not an object, another ``format_version``, or a missing field (named).
        """
        if not isinstance(data, dict):
            raise FormatError("a render manifest must be a JSON object", source=source)
        if data.get("format_version") != FORMAT_VERSION:
            raise FormatError(f"unknown render manifest version (this clevr_poc reads {FORMAT_VERSION})",
                              source=source, field="format_version", value=data.get("format_version"))
        values = {}
        for f in fields(cls):
            if f.name not in data:
                raise FormatError("missing field of the render manifest", source=source, field=f.name)
            values[f.name] = data[f.name]
        return cls(**values)

    def differences(self, asked: "RenderManifest") -> list[tuple[str, object, object]]:
        """(setting, this manifest's value, ``asked``'s value) for each compared field that differs."""
        return [(f.name, getattr(self, f.name), getattr(asked, f.name)) for f in fields(self)
                if f.name not in _NOT_COMPARED and getattr(self, f.name) != getattr(asked, f.name)]


def manifest_path(dataset: str | os.PathLike[str], kind: str) -> Path:
    """``DIR/<kind>/images/render.json``."""
    return Path(dataset) / kind / "images" / MANIFEST_NAME


def read_render_manifest(dataset: str | os.PathLike[str], kind: str = "incomplete") -> RenderManifest | None:
    """The manifest of ``DIR/<kind>/images``, or None when the folder has none.

    Raises:
        FormatError: an unreadable or malformed manifest.
    """
    from clevr_poc._io import read_json

    path = manifest_path(dataset, kind)
    return RenderManifest.from_json(read_json(path), source=path) if path.is_file() else None


def _has_images(dataset: Path, kind: str) -> bool:
    return any(True for _ in (dataset / kind / "images").glob("*/*.png"))


def check_render_folders(dataset: str | os.PathLike[str], kinds: Sequence[str], asked: RenderManifest, *,
                         overwrite: bool = False) -> tuple[Path, ...]:
    """Compare each ``DIR/<kind>/images`` with the asked settings (module doc); writes nothing.

    Returns the images folders that hold images but no manifest (their settings cannot be checked).

    Raises:
        RenderSettingsError: a manifest differs from ``asked`` and ``overwrite`` is False.
        FormatError: a malformed manifest.
    """
    unchecked: list[Path] = []
    for kind in kinds:
        existing = read_render_manifest(dataset, kind)
        if existing is None:
            if _has_images(Path(dataset), kind):
                unchecked.append(Path(dataset) / kind / "images")
            continue
        differences = existing.differences(asked)
        if differences and not overwrite:
            raise RenderSettingsError(Path(dataset) / kind / "images", differences)
    return tuple(unchecked)


def record_before_render(dataset: str | os.PathLike[str], kinds: Sequence[str], asked: RenderManifest, *,
                         overwrite: bool = False) -> None:
    """Bring the manifests up to date before rendering (after :func:`check_render_folders`): a folder with
    no image yet gets ``asked``'s manifest (so an interrupted first run is checked when resumed); with
    ``overwrite`` a differing manifest is removed (the folder holds both looks until
    :func:`record_after_overwrite`). Folders with images and no manifest stay unchecked."""
    from clevr_poc._io import atomic_write_json

    for kind in kinds:
        path = manifest_path(dataset, kind)
        existing = read_render_manifest(dataset, kind)
        if existing is None and not _has_images(Path(dataset), kind):
            atomic_write_json(path, asked.to_json(), indent=2)
        elif existing is not None and overwrite and existing.differences(asked):
            path.unlink()


def record_after_overwrite(dataset: str | os.PathLike[str], kinds: Sequence[str], asked: RenderManifest) -> None:
    """After an ``overwrite`` run that rendered every image of ``kinds`` again: record ``asked``."""
    from clevr_poc._io import atomic_write_json

    for kind in kinds:
        atomic_write_json(manifest_path(dataset, kind), asked.to_json(), indent=2)


__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "RenderManifest", "RenderSettingsError", "SEED_RULE", "assets_digest",
           "check_render_folders", "manifest_path", "read_render_manifest", "record_after_overwrite",
           "record_before_render"]
