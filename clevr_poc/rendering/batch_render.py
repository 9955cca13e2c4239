"""Render the images of a generated dataset folder (``python -m clevr_poc render``).

Layout (written by :mod:`clevr_poc.generation.dataset_writer`; official CLEVR-POC release)::

    DIR/incomplete/scenes/<split>/CLEVR_%06d.json  ->  DIR/incomplete/images/<split>/<image_filename>
    DIR/complete/scenes/<split>/CLEVR_%06d.json    ->  DIR/complete/images/<split>/<image_filename>

Each scene file is rewritten (atomically) with the ground truth of :func:`render_scene` (masks, boxes,
``pixel_coords``, camera) after its image has been written (atomically). A scene is *done* when its image
exists and its JSON carries the ``render`` key, so an interrupted run resumes where it stopped. The
settings that decide the pixels are kept in ``DIR/<kind>/images/render.json``
(:mod:`clevr_poc.rendering.render_manifest`): resuming with other settings is refused before anything is
rendered (``overwrite`` renders every image again and records the new settings).

The seed of an image is derived from (``seed``, split, ``image_filename``) by :func:`image_seed`, so the
complete and the partial image of an example share camera and lights (they differ only by the hidden
object), and the result does not depend on the worker count or the order of rendering. ``seed`` defaults
to the dataset's seed (``DIR/dataset.json``, written by ``generate``; 0 without one): the generator
checks every layout from the camera of that very seed (:mod:`clevr_poc.generation.dataset_writer`).

Interruptions: Ctrl-C removes the temp file of the image being rendered; a hard kill (SIGKILL, power
loss) can leave one behind (``.<image>.<pid>.tmp`` beside the images, or ``.<scene>.json.<random>.tmp``
beside the scene files), never a partial PNG or JSON under the final name. The next run removes such
leftovers first (:func:`remove_stale_temp_files`: image temps whose process is gone, scene temps older
than a minute), so a resumed dataset ends with no temp files.

Visibility: objects under the pixel minimum are reported (counted in the summary, listed per scene),
not re-placed: moving an object here would change the relationships the questions were generated from.
``generate`` checks visibility while laying out (no Blender needed), from the camera of the default seed
at the default image size.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from clevr_poc.errors import FormatError
from clevr_poc.render_settings import RenderSettings
from clevr_poc.rendering.render import RenderError, bpy_available, render_scene
from clevr_poc.scene import Scene

#: Scene kinds (sub-folders of a dataset folder).
KINDS: tuple[str, ...] = ("incomplete", "complete")


@dataclass(frozen=True)
class RenderTask:
    """One image to render: the scene file, the PNG path, the image seed and the render settings."""

    scene_path: str
    image_path: str
    seed: int
    settings: RenderSettings


@dataclass(frozen=True)
class RenderTaskResult:
    """What a worker reports: timings, and the objects under the pixel minimum ((index, pixels, reason))."""

    scene_path: str
    image_path: str
    seconds: float
    render_seconds: float
    offending: tuple[tuple[int, int, str], ...]


@dataclass(frozen=True)
class RenderSummary:
    """Outcome of :func:`render_dataset`.

    Attributes:
        images: images the selection holds; ``rendered`` now, ``skipped`` already done.
        seconds: wall clock of the rendering part; ``seconds_per_image``: mean over rendered images of
            each worker's time (wall clock per image of one worker).
        invisible: (scene path, ((object, pixels, reason), ...)) for scenes with objects under the minimum.
        stale_temp_files: temp files of an earlier, killed run removed before rendering
            (:func:`remove_stale_temp_files`).
        unchecked: images folders that hold images but no render manifest
            (:mod:`clevr_poc.rendering.render_manifest`): their settings could not be checked.
    """

    images: int
    rendered: int
    skipped: int
    seconds: float
    seconds_per_image: float | None
    invisible: tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...] = field(default=())
    stale_temp_files: int = 0
    unchecked: tuple[str, ...] = ()

    def warnings(self) -> list[str]:
        """One ``warning: ...`` line per images folder whose settings could not be checked (:attr:`unchecked`)."""
        from clevr_poc.rendering.render_manifest import MANIFEST_NAME

        return [f"warning: {folder} has no {MANIFEST_NAME} (rendered before clevr_poc recorded render settings): "
                f"its images' settings cannot be checked against those asked; resumed as asked"
                for folder in self.unchecked]

    def report(self, **more: Any) -> dict[str, Any]:
        """The summary as a JSON object (``render --json`` and the ``render`` entry of ``generate --json``):
        the counts, ``seconds`` (rounded to 0.01) and ``seconds_per_image`` (to 0.001, or None), then the
        entries of ``more``, then ``invisible`` as ``[{"scene": path, "objects": [[object, pixels, reason],
        ...]}, ...]``."""
        return {"images": self.images, "rendered": self.rendered, "skipped": self.skipped,
                "seconds": round(self.seconds, 2),
                "seconds_per_image": None if self.seconds_per_image is None else round(self.seconds_per_image, 3),
                **more, "settings_unchecked": list(self.unchecked),
                "invisible": [{"scene": s, "objects": [list(o) for o in objs]} for s, objs in self.invisible]}


def image_seed(seed: int, split: str, image_filename: str) -> int:
    """32-bit seed of one image from the dataset seed, the split and the image file name (the base name,
    e.g. ``CLEVR_train_000000.png``). The generator uses it for its visibility check."""
    digest = hashlib.sha256(f"{seed}\x00{split}\x00{image_filename}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def dataset_seed(dataset: str | os.PathLike[str]) -> int:
    """The seed recorded in ``DIR/dataset.json`` (the manifest ``generate`` writes), or 0 without one.

    Raises:
        FormatError: the manifest is unreadable or its ``seed`` is not an integer.
    """
    from clevr_poc._io import read_json

    manifest = Path(dataset) / "dataset.json"
    if not manifest.is_file():
        return 0
    data = read_json(manifest)
    seed = data.get("seed") if isinstance(data, dict) else None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise FormatError("the dataset's seed must be an integer", source=manifest, field="seed", value=seed)
    return seed


def _splits(dataset: Path, kind: str, splits: Sequence[str] | None) -> list[str]:
    root = dataset / kind / "scenes"
    if splits:
        missing = [s for s in splits if not (root / s).is_dir()]
        if missing:
            raise FormatError(f"no scenes folder for split(s) {missing}", source=root)
        return list(splits)
    if not root.is_dir():
        raise FormatError("not a dataset folder (no scenes folder)", source=root)
    return sorted(p.name for p in root.iterdir() if p.is_dir())


#: ``.<image>.<pid>.tmp``: the temp PNG of :func:`clevr_poc.rendering.render.render_scene`.
_IMAGE_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)\.tmp$")
#: Scene temp files of earlier versions (``.<scene>.json.<8 random characters>.tmp``) at least this old
#: (seconds) are stale (:data:`clevr_poc._io.LEGACY_TEMP_AGE`).
SCENE_TEMP_MAX_AGE = 60.0


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_stale_temp_files(dataset: str | os.PathLike[str], *, kinds: Sequence[str] = KINDS,
                            now: float | None = None) -> list[Path]:
    """Remove the temp files a killed render left in ``DIR/<kind>/images/*/`` and ``DIR/<kind>/scenes/*/``.

    An image temp of earlier versions (``.<image>.<pid>.tmp``) is stale when no process ``pid`` runs (a
    render running at the same time, on this machine, keeps its own); the temp files of
    :mod:`clevr_poc._io`'s atomic writes (images and scene files, ``.<name>.<pid>-<hex>.tmp``, and
    ``.<scene>.json.<random>.tmp`` of earlier versions) as :func:`clevr_poc._io.is_stale_temp` says, with
    ``now`` (default: the current time). Other files are never touched. Returns the removed paths, sorted.
    """
    from clevr_poc._io import remove_stale_temp_files as remove_own_temps

    dataset = Path(dataset)
    now = time.time() if now is None else now
    removed: list[Path] = []
    for kind in kinds:
        for path in sorted((dataset / kind / "images").glob("*/.*.tmp")):
            match = _IMAGE_TEMP.match(path.name)
            if match and not _process_alive(int(match["pid"])):
                path.unlink(missing_ok=True)
                removed.append(path)
        for folder in sorted((dataset / kind / "images").glob("*/")) + sorted((dataset / kind / "scenes").glob("*/")):
            removed += remove_own_temps(folder, now=now)  # the temp files of clevr_poc._io's atomic writes
    return sorted(removed)


def plan_tasks(dataset: str | os.PathLike[str], *, splits: Sequence[str] | None = None, complete: bool = False,
               seed: int | None = None, overwrite: bool = False, limit: int | None = None,
               settings: RenderSettings | None = None) -> tuple[list[RenderTask], int]:
    """The images still to render (in split, file name order) and the number already done.

    ``seed`` (None: :func:`dataset_seed`) gives each image's seed by :func:`image_seed`.

    Raises:
        FormatError: not a dataset folder, a missing split, a bad scene file, or a scene without
            ``image_filename``.
    """
    dataset = Path(dataset)
    if seed is None:
        seed = dataset_seed(dataset)
    tasks: list[RenderTask] = []
    done = 0
    settings = settings or RenderSettings()
    for kind in KINDS if complete else KINDS[:1]:
        for split in _splits(dataset, kind, splits):
            for scene_path in sorted((dataset / kind / "scenes" / split).glob("*.json")):
                scene = Scene.from_file(scene_path)
                if not scene.image_filename:
                    raise FormatError("missing image_filename", source=scene_path, field="image_filename")
                name = Path(scene.image_filename).name
                image_path = dataset / kind / "images" / split / name
                if not overwrite and image_path.exists() and scene.image is not None and scene.image.render is not None:
                    done += 1
                    continue
                if limit is not None and len(tasks) >= limit:
                    continue
                tasks.append(RenderTask(str(scene_path), str(image_path), image_seed(seed, split, name), settings))
    return tasks, done


def render_task(task: RenderTask) -> RenderTaskResult:
    """Render one image and rewrite its scene file with the ground truth (module-level: picklable)."""
    scene = Scene.from_file(task.scene_path)
    result = render_scene(scene, task.image_path, task.settings, seed=task.seed)
    result.scene.to_file(task.scene_path)
    offending = tuple((o.index, o.pixels, o.reason) for o in result.visibility.offending)
    return RenderTaskResult(task.scene_path, task.image_path, result.stats.seconds, result.stats.render_seconds,
                            offending)


def render_dataset(
    dataset: str | os.PathLike[str],
    *,
    splits: Sequence[str] | None = None,
    complete: bool = False,
    settings: RenderSettings | None = None,
    seed: int | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    overwrite: bool = False,
    limit: int | None = None,
    progress: bool = True,
    **overrides: object,
) -> RenderSummary:
    """Render every scene of a dataset folder that has no image yet (module doc), after removing the
    temp files a killed earlier run left (:func:`remove_stale_temp_files`).

    Resuming: the settings that decide the pixels are kept in ``DIR/<kind>/images/render.json``
    (:mod:`clevr_poc.rendering.render_manifest`); a folder rendered with other settings is refused
    (:class:`~clevr_poc.rendering.render_manifest.RenderSettingsError`) before anything is rendered, unless
    ``overwrite``; a folder with images and no manifest is resumed and listed in ``unchecked``.

    Each worker renders with ``os.cpu_count() // workers`` Blender threads (local executor). ``seed``
    None (default) is the dataset's seed (:func:`dataset_seed`), the one ``generate`` checked visibility with.
    ``settings`` (:class:`~clevr_poc.render_settings.RenderSettings`; default: the defaults) with
    ``overrides`` (its fields: ``samples=``, ``style=``, ``width=``, ...) are those of :func:`render_scene`.

    Raises:
        FormatError: see :func:`plan_tasks`; a malformed render manifest.
        RenderSettingsError: a folder was rendered with other settings (and not ``overwrite``).
        RenderError: bad settings, ``bpy`` missing, Blender failed.
        clevr_poc.executors.ExecutorError: bad executor settings.
    """
    from clevr_poc.executors import default_workers, map_ordered

    from clevr_poc.rendering.render_manifest import (
        RenderManifest, check_render_folders, record_after_overwrite, record_before_render,
    )

    threads = max(1, default_workers() // workers) if executor == "local" else 0
    kinds = KINDS if complete else KINDS[:1]
    settings = (settings or RenderSettings()).with_overrides(**overrides, threads=threads)
    if settings.assets is not None:
        from clevr_poc.rendering.assets import find_assets

        find_assets(settings.assets)  # the typed error naming the missing file, before any worker starts
    if seed is None:
        seed = dataset_seed(dataset)
    for kind in kinds:
        _splits(Path(dataset), kind, splits)  # not a dataset folder: that error first
    # the settings the folders were rendered with: a differing folder is refused before anything is touched
    asked = RenderManifest.of(settings, seed)
    unchecked = check_render_folders(dataset, kinds, asked, overwrite=overwrite)
    stale = remove_stale_temp_files(dataset, kinds=kinds)
    tasks, done = plan_tasks(dataset, splits=splits, complete=complete, seed=seed, overwrite=overwrite, limit=limit,
                             settings=settings)
    # fail before starting workers; not by importing bpy here: spawned workers would inherit the
    # sys.path entries that Blender adds (see render._import_bpy)
    if tasks and not bpy_available():
        raise RenderError("rendering needs Blender's Python module (bpy); "
                          "pip install '.[render]' in the clevr_poc folder (bpy==5.0.1, Python 3.11)")
    record_before_render(dataset, kinds, asked, overwrite=overwrite)
    start = time.perf_counter()
    results: list[RenderTaskResult] = list(map_ordered(
        render_task, tasks, workers=workers, executor=executor, ray_address=ray_address,
        progress="render" if progress else False, total=len(tasks)))
    seconds = time.perf_counter() - start
    if overwrite and limit is None:  # every image of the kinds' selected splits rendered again
        every_split = [k for k in kinds if not splits or set(splits) >= set(_splits(Path(dataset), k, None))]
        record_after_overwrite(dataset, every_split, asked)
        unchecked = tuple(u for u in unchecked if u.parent.name not in every_split)
    invisible = tuple((r.scene_path, r.offending) for r in results if r.offending)
    per_image = sum(r.seconds for r in results) / len(results) if results else None
    return RenderSummary(len(tasks) + done, len(results), done, seconds, per_image, invisible, len(stale),
                         tuple(str(u) for u in unchecked))


def iter_scene_files(dataset: str | os.PathLike[str], kind: str = "incomplete") -> Iterable[Path]:
    """Scene files of a dataset folder (all splits), sorted."""
    yield from sorted((Path(dataset) / kind / "scenes").glob("*/*.json"))
