"""Asset ``.blend`` files are data, not programs: what ``render --assets DIR`` refuses or replaces.

A ``.blend`` file can carry more than meshes: a compositor whose File Output node writes anywhere, a
Subdivision modifier at level 8 (13 GB for one image), drivers that move objects after their masks were
computed, links to other files (``/dev/stdin`` blocks), image files, collection instances. Before Blender
opens a file, :func:`check_links` reads its block headers (Blender's own ``_blendfile_header`` reader)
and refuses any linked library. After a file is opened or appended, :func:`check_loaded_data` refuses
everything that is not on the list below, and :func:`own_scene_settings` replaces the scene's compositor,
sequencer and output settings with the library's own. Blender runs with its stdin on ``/dev/null``
(:func:`closed_stdin`).

Allowed (the official files use exactly these, checked with a copy of the official ``data/`` folder):

* objects of type mesh, light, camera or empty, at most :data:`MAX_OBJECTS` per file, no instancing;
* modifiers: Subdivision (``SUBSURF``) only, not adaptive, with at most :data:`MAX_POLYGONS` polygons
  per object after subdivision (polygons x 4 ^ render levels; the official ground: 47 x 4^2 = 752);
  every mesh at most :data:`MAX_POLYGONS` polygons and vertices;
* constraints: ``TRACK_TO``, ``DAMPED_TRACK``, ``LOCKED_TRACK`` (the official lights and camera aim at
  an empty with ``TRACK_TO``);
* no animation data (drivers, actions) on any datablock, no image other than Blender's own render
  result/viewer, no movie clip, sound, cache file or volume file, no new app handler.

Everything refused is an :class:`AssetsError` naming the file, the datablock and what was found.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator

from clevr_poc.rendering.blender import on_devnull
from clevr_poc.rendering.render import RenderError

#: Most objects in one asset file (the official base scene has 7, a shape file 3).
MAX_OBJECTS = 64
#: Most polygons (after subdivision) and vertices of one mesh object (the official cylinder has 33,152
#: polygons; 250,000 keeps one object well under 1 GB in Cycles).
MAX_POLYGONS = 250_000
#: Modifier and constraint types taken from the files (module doc).
ALLOWED_MODIFIERS = frozenset({"SUBSURF"})
ALLOWED_CONSTRAINTS = frozenset({"TRACK_TO", "DAMPED_TRACK", "LOCKED_TRACK"})
ALLOWED_OBJECT_TYPES = frozenset({"MESH", "LIGHT", "CAMERA", "EMPTY"})


class AssetsError(RenderError):
    """``--assets DIR`` is not an official ``data/`` folder (a file, object or node group is missing) or a
    file in it holds something asset files may not (:mod:`clevr_poc.rendering.asset_safety`)."""


@contextlib.contextmanager
def closed_stdin() -> Iterator[None]:
    """Point file descriptor 0 at ``/dev/null`` while Blender runs (a library or image path
    ``/dev/stdin`` then reads nothing instead of blocking on a pipe or terminal); restored afterwards."""
    with on_devnull(0, os.O_RDONLY):
        yield


def _printable_runs(data: bytes) -> list[str]:
    runs, current = [], bytearray()
    for byte in data:
        if 32 <= byte < 127:
            current.append(byte)
        else:
            if len(current) >= 3:
                runs.append(current.decode("ascii"))
            current = bytearray()
    if len(current) >= 3:
        runs.append(current.decode("ascii"))
    return runs


def check_links(path: Path) -> None:
    """Refuse ``path`` if it links another file (a ``LI`` block), read from its block headers before
    Blender opens it (Blender's ``_blendfile_header``, gzip and zstd files included; needs ``bpy``
    imported, which puts Blender's modules on ``sys.path``).

    Raises:
        AssetsError: not a ``.blend`` file, or one linking a library (names its path).
    """
    import _blendfile_header
    from blend_render_info import RawBlendFileReader

    try:
        with RawBlendFileReader(str(path)) as blend:
            header = _blendfile_header.BlendFileHeader(blend)
            block_header = header.create_block_header_struct()
            while (block := _blendfile_header.BlockHeader(blend, block_header)).code != b"ENDB":
                if block.code == b"LI":
                    data = blend.read(min(block.size, 4096))
                    paths = [run for run in _printable_runs(data) if "/" in run or "\\" in run]
                    linked = paths[0] if paths else "?"  # the first string with a slash: Library.filepath
                    if linked.startswith("//"):  # Blender's relative path
                        linked = os.path.normpath(path.parent / linked[2:])
                    raise AssetsError(f"{path}: links the library {linked!r} "
                                      "(refused: asset files must be self-contained)")
                blend.seek(block.size, os.SEEK_CUR)
    except _blendfile_header.BlendHeaderError:
        raise AssetsError(f"{path}: not a .blend file") from None
    except (OSError, EOFError, ValueError) as exc:  # truncated or corrupt (gzip/zstd errors are OSError)
        raise AssetsError(f"{path}: cannot read it as a .blend file ({exc})") from None


def own_scene_settings(scene: Any) -> None:
    """Replace what a file's scene would run or write besides the image: no compositor (and no compositor
    node group left anywhere: File Output nodes write wherever they point), no sequencer, no background
    set, no multi-view (which writes extra files), no other scene."""
    import bpy

    scene.compositing_node_group = None
    for group in [g for g in bpy.data.node_groups if g.bl_idname == "CompositorNodeTree"]:
        bpy.data.node_groups.remove(group)
    scene.render.use_compositing = True  # only our own compositor (the object-index pass) is ever set
    scene.render.use_sequencer = False
    if scene.sequence_editor is not None:
        scene.sequence_editor_clear()
    scene.background_set = None
    scene.render.use_multiview = False
    for other in [s for s in bpy.data.scenes if s != scene]:
        bpy.data.scenes.remove(other)


def handler_counts() -> dict[str, int]:
    """How many functions each ``bpy.app.handlers`` list holds (compared by :func:`check_loaded_data`)."""
    import bpy

    return {name: len(value) for name in dir(bpy.app.handlers)
            if not name.startswith("_") and isinstance(value := getattr(bpy.app.handlers, name), list)}


def _mesh_polygons(obj: Any, source: Path) -> None:
    mesh = obj.data
    levels = 0
    for modifier in obj.modifiers:
        if modifier.type not in ALLOWED_MODIFIERS:
            raise AssetsError(f"{source}: object {obj.name!r} has the modifier {modifier.name!r} ({modifier.type}) "
                              f"(refused: only {sorted(ALLOWED_MODIFIERS)} are taken from files)")
        if modifier.use_adaptive_subdivision:
            raise AssetsError(f"{source}: object {obj.name!r}: adaptive subdivision in modifier {modifier.name!r} "
                              "(refused: unbounded polygon count)")
        levels += max(int(modifier.render_levels), int(modifier.levels))
    polygons = len(mesh.polygons) * 4 ** min(levels, 32)
    if polygons > MAX_POLYGONS or len(mesh.vertices) > MAX_POLYGONS:
        raise AssetsError(f"{source}: object {obj.name!r} has {len(mesh.polygons):,} polygons, "
                          f"{len(mesh.vertices):,} vertices and subdivision level {levels} "
                          f"({polygons:,} polygons; at most {MAX_POLYGONS:,} per object)")


def _check_object(obj: Any, source: Path) -> None:
    if obj.type not in ALLOWED_OBJECT_TYPES:
        raise AssetsError(f"{source}: object {obj.name!r} is a {obj.type} "
                          f"(refused: only {sorted(ALLOWED_OBJECT_TYPES)} objects are taken from files)")
    if obj.instance_type != "NONE":
        raise AssetsError(f"{source}: object {obj.name!r} instances {obj.instance_type} (refused)")
    for constraint in obj.constraints:
        if constraint.type not in ALLOWED_CONSTRAINTS:
            raise AssetsError(f"{source}: object {obj.name!r} has the constraint {constraint.name!r} "
                              f"({constraint.type}) "
                              f"(refused: only {sorted(ALLOWED_CONSTRAINTS)} are taken from files)")
    if obj.type == "MESH":
        _mesh_polygons(obj, source)
    elif len(obj.modifiers):
        raise AssetsError(f"{source}: object {obj.name!r} ({obj.type}) has modifiers (refused)")


def _animated(block: Any) -> bool:
    owners = [block, getattr(block, "node_tree", None), getattr(block, "shape_keys", None)]
    return any(owner is not None and getattr(owner, "animation_data", None) is not None
               and (owner.animation_data.action is not None or len(owner.animation_data.drivers))
               for owner in owners)


def check_loaded_data(source: Path, handlers_before: dict[str, int]) -> None:
    """Refuse what Blender now holds after opening or appending from ``source`` (module doc's list).

    Raises:
        AssetsError: names ``source``, the datablock and what it holds.
    """
    import bpy

    if len(bpy.data.objects) > MAX_OBJECTS:
        raise AssetsError(f"{source}: {len(bpy.data.objects):,} objects (at most {MAX_OBJECTS})")
    for obj in bpy.data.objects:
        _check_object(obj, source)
    for kind in ("objects", "meshes", "materials", "node_groups", "worlds", "lights", "cameras", "scenes",
                 "textures", "shape_keys"):
        for block in getattr(bpy.data, kind):
            if _animated(block):
                raise AssetsError(f"{source}: {kind[:-1].replace('_', ' ')} {block.name!r} has drivers or "
                                  "animation (refused: they would move or change what the masks describe)")
    for image in bpy.data.images:
        if image.source not in ("VIEWER",):
            raise AssetsError(f"{source}: image {image.name!r} ({image.source} {image.filepath!r}) "
                              "(refused: asset files may not read images)")
    for kind in ("movieclips", "sounds", "cache_files", "volumes"):
        if len(getattr(bpy.data, kind)):
            raise AssetsError(f"{source}: holds {kind.replace('_', ' ')} "
                              f"{[b.name for b in getattr(bpy.data, kind)][:5]} (refused)")
    added = [name for name, n in handler_counts().items() if n > handlers_before.get(name, 0)]
    for name in added:  # never left registered
        del getattr(bpy.app.handlers, name)[handlers_before.get(name, 0):]
    if added:
        raise AssetsError(f"{source}: registered app handlers {added} (refused)")
