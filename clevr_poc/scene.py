"""Scene value objects and the official CLEVR-POC scene JSON format.

A *complete scene* has N objects (5-9 in CLEVR-POC); the *partial* (incomplete) scene hides one of
them, the object of interest, and renumbers the rest ``0..N-2``. Scene JSON (official layout):

```
{"split": "train", "image_index": 0, "image_filename": "CLEVR_train_000000.png",
 "objects": [{"color": "red", "size": "large", "shape": "cube", "material": "metal",
              "region": "0", "3d_coords": [x, y, z], "pixel_coords": [u, v, depth], ...}, ...],
 "relationships": {"left": [[...], ...], "right": ..., "front": ..., "behind": ...}}
```

``relationships[rel][i]`` lists every j such that object j is ``rel`` of object i (world convention:
``left[i]`` = objects with smaller x, ``front[i]`` = objects with smaller y). The keys the library
writes are typed fields: per object the renderer's ground truth (``rotation``, ``mask``, ``bbox``,
``visible_pixels``) and perception's estimates (``probabilities``, ``region_probabilities``, ``score``,
``bbox``, ``detection``); per scene ``constraint_type_index`` (:attr:`Scene.environment_id`) and the
metadata of :mod:`clevr_poc.scene_metadata` (``camera`` and ``render``: :attr:`Scene.image`;
``generation``; ``perception``). Keys the library does not interpret are kept verbatim in ``extra``, and
the order of the keys read is remembered, so that files round-trip exactly.
"""

from __future__ import annotations

import bisect
import math
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from clevr_poc import domain, limits
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.camera import Camera
from clevr_poc.errors import FormatError
from clevr_poc.scene_metadata import GenerationCounts, ImageInfo, PerceptionInfo

_OBJECT_KEYS = ("color", "size", "shape", "material", "region")
#: The official spelling of region ids in scene JSON: exactly these strings (no spaces, signs, other digits).
_REGION_OF = {str(r): r for r in domain.REGIONS}


@dataclass(frozen=True)
class SceneObject:
    """One CLEVR object.

    Attributes:
        color, shape, size, material: values from :mod:`clevr_poc.domain`.
        region: region id 0..3 (stored as a string ``"0".."3"`` in scene JSON).
        coords_3d: ``3d_coords`` (x, y, z) in world units, or None.
        pixel_coords: ``pixel_coords`` (u, v, depth): pixels from the image's top-left, depth in world
            units from the camera; or None.
        extra: other keys of the JSON object (none of the typed ones below), kept verbatim.
        rotation: ``rotation``, degrees about z (layout, render; CLEVR ``render_images.py``), or None.
        mask: ``mask``, COCO RLE ``{"size": [H, W], "counts": str}`` of the visible pixels (render), or None.
        bbox: ``bbox`` ``(x, y, w, h)`` pixels, COCO: of the mask (render; None when nothing is visible)
            or of the detection (perception).
        visible_pixels: ``visible_pixels``, the mask's area in pixels (render), or None.
        probabilities: ``probabilities``, attribute -> value -> probability (perception), or None.
        region_probabilities: ``region_probabilities``, region id as a string -> probability (perception).
        score: ``score``, the detector's score in [0, 1] (perception). detection: ``detection``, its index
            among the detector's candidates (perception).

    Only the seven attributes and positions take part in ``==`` (the other fields are annotations).
    """

    color: str
    shape: str
    size: str
    material: str
    region: int
    coords_3d: tuple[float, ...] | None = None
    pixel_coords: tuple[float, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    rotation: float | None = field(default=None, compare=False)
    mask: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    probabilities: Mapping[str, Mapping[str, float]] | None = field(default=None, compare=False, hash=False)
    region_probabilities: Mapping[str, float] | None = field(default=None, compare=False, hash=False)
    score: float | None = field(default=None, compare=False)
    bbox: tuple[float, float, float, float] | None = field(default=None, compare=False)
    visible_pixels: int | None = field(default=None, compare=False)
    detection: int | None = field(default=None, compare=False)
    #: how the JSON object was spelled when read (key order, region as an integer): files round-trip exactly
    json_spelling: "JsonSpelling" = field(default=None, compare=False, hash=False,  # type: ignore[assignment]
                                          repr=False)

    def __post_init__(self) -> None:
        typed = [k for k in self.extra if k in _TYPED_OBJECT_KEYS or k in _OBJECT_KEYS
                 or k in ("3d_coords", "pixel_coords")]
        if typed:
            raise ValueError(f"{typed[0]!r} is a field of SceneObject, not an 'extra' key")
        if self.json_spelling is None:
            object.__setattr__(self, "json_spelling", _NO_SPELLING)

    def attribute(self, name: str) -> str:
        """The value of attribute ``name`` (one of :data:`clevr_poc.domain.ATTRIBUTES`)."""
        if name not in domain.ATTRIBUTES:
            raise KeyError(f"unknown attribute {name!r}; expected one of {domain.ATTRIBUTES}")
        return getattr(self, name)

    def describe(self) -> str:
        """Plain words, e.g. ``"large red metal cube in region 0"``."""
        return f"{self.size} {self.color} {self.material} {self.shape} in region {self.region}"

    @classmethod
    def from_json(cls, data: object, *, source: object = None, index: int | None = None) -> "SceneObject":
        """Build from one official JSON object; raises :class:`FormatError` naming the field."""
        where = "objects" if index is None else f"objects[{index}]"
        if not isinstance(data, Mapping):
            raise FormatError("an object must be a JSON object", source=source, field=where, value=data)
        values: dict[str, Any] = {}
        for attribute in domain.ATTRIBUTES:
            if attribute not in data:
                raise FormatError("missing attribute", source=source, field=f"{where}.{attribute}")
            value = data[attribute]
            if value not in domain.DOMAINS[attribute]:
                raise FormatError(
                    f"not a {attribute}; expected one of {list(domain.DOMAINS[attribute])}",
                    source=source, field=f"{where}.{attribute}", value=value,
                )
            values[attribute] = value
        if "region" not in data:
            raise FormatError("missing region", source=source, field=f"{where}.region")
        region_raw = data["region"]
        region = _REGION_OF.get(region_raw, -1) if isinstance(region_raw, str) else (
            region_raw if type(region_raw) is int else -1)  # noqa: E721 - bool and float are refused
        if region not in domain.REGIONS:
            raise FormatError('region must be one of the strings "0", "1", "2", "3" (official) or the integers '
                              "0..3", source=source, field=f"{where}.region", value=region_raw)
        coords = _coords(data.get("3d_coords"), source, f"{where}.3d_coords")
        pixels = _coords(data.get("pixel_coords"), source, f"{where}.pixel_coords")
        rest = [k for k in data if k not in _OBJECT_KEYS and k not in ("3d_coords", "pixel_coords")]
        typed: dict[str, Any] = {}
        for key in rest:
            if key in _TYPED_OBJECT_KEYS and data[key] is not None:
                check, what = _TYPED_OBJECT_KEYS[key]
                if not check(data[key]):
                    raise FormatError(f"must be {what}", source=source, field=f"{where}.{key}", value=data[key])
                typed[key] = tuple(data[key]) if key == "bbox" else data[key]
        extra = {k: data[k] for k in rest if k not in _TYPED_OBJECT_KEYS}
        # remember how the object was spelled so that files round-trip byte for byte
        spelling = JsonSpelling(tuple(rest), not isinstance(region_raw, str))
        return cls(region=region, coords_3d=coords, pixel_coords=pixels, extra=extra, json_spelling=spelling,
                   **typed, **values)

    def to_json(self) -> dict[str, Any]:
        """The official JSON object (region as a string, as the official files store it; the keys after
        the positions in the order read, else: ``extra``'s, then the typed fields in field order)."""
        data: dict[str, Any] = {
            "color": self.color, "size": self.size, "shape": self.shape, "material": self.material,
            "region": self.region if self.json_spelling.region_as_int else str(self.region),
        }
        if self.coords_3d is not None:
            data["3d_coords"] = list(self.coords_3d)
        if self.pixel_coords is not None:
            data["pixel_coords"] = list(self.pixel_coords)
        order = self.json_spelling.key_order
        rest: dict[str, Any] = dict(self.extra)
        for key in _TYPED_OBJECT_KEYS:
            value = getattr(self, key)
            if value is not None or key in order or (key == "bbox" and self.mask is not None):
                rest[key] = list(value) if key == "bbox" and value is not None else value
        if order:
            rest = {k: rest[k] for k in order if k in rest} | {k: v for k, v in rest.items() if k not in order}
        data.update(rest)
        return data


@dataclass(frozen=True)
class JsonSpelling:
    """How a JSON object was spelled when read: the order of its keys after the positions (object) or of
    all its keys (scene), whether the region was an integer (object) and ``constraint_type_index`` when it
    was a string of digits (scene). Empty for values built in code."""

    key_order: tuple[str, ...] = ()
    region_as_int: bool = False
    environment_id_text: str | None = None


_NO_SPELLING = JsonSpelling()


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: Typed object keys (the SceneObject fields after ``extra``, in the order they are written) and the check of
#: their JSON value (null is always accepted: absent).
_TYPED_OBJECT_KEYS: dict[str, tuple[Any, str]] = {
    "rotation": (_number, "a number of degrees"),
    "mask": (lambda v: isinstance(v, Mapping), "a COCO RLE object"),
    "probabilities": (lambda v: isinstance(v, Mapping), "an object (attribute -> value -> probability)"),
    "region_probabilities": (lambda v: isinstance(v, Mapping), "an object (region -> probability)"),
    "score": (_number, "a number"),
    "bbox": (lambda v: isinstance(v, list) and len(v) == 4 and all(_number(c) for c in v), "[x, y, w, h] or null"),
    "visible_pixels": (_count, "a count"),
    "detection": (_count, "a count"),
}


def _coords(value: object, source: object, where: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not 2 <= len(value) <= 3 or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise FormatError("must be a list of 2 or 3 finite numbers", source=source, field=where, value=value)
    return tuple(value)


_SCENE_KEYS = ("objects", "relationships", "split", "image_index", "image_filename")
#: Top-level keys read into typed Scene fields.
_TYPED_SCENE_KEYS = ("constraint_type_index", "generation", "camera", "render", "perception")


def _file_name(value: object, source: object, where: str) -> str | None:
    """``image_filename``: None or a plain file name (no folder part): it is joined to image folders."""
    if value is None:
        return None
    if (not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value
            or "\x00" in value):
        raise FormatError("must be a file name without a folder part", source=source, field=where, value=value)
    return value


#: The relationships mappings made here in their final form (``rel -> tuple of tuples of ints``), by id,
#: each with the mapping itself (so that its id stays its own) and its items when made: a scene made from
#: such a mapping (``dataclasses.replace``, :meth:`Scene.without_object`, :func:`compute_relationships`)
#: keeps it instead of converting every row again (issue 27), as long as it still holds exactly those
#: rows (tuples: a mapping changed since is converted as any other).
_NORMALISED: dict[int, tuple[Mapping[str, tuple[tuple[int, ...], ...]], tuple[tuple[str, Any], ...]]] = {}
_NORMALISED_KEPT = 512


def _normalised(relationships: dict[str, tuple[tuple[int, ...], ...]]) -> dict[str, tuple[tuple[int, ...], ...]]:
    """Record ``relationships`` (already rel -> tuple of tuples of ints) as final; returns it."""
    if len(_NORMALISED) >= _NORMALISED_KEPT:
        _NORMALISED.clear()
    _NORMALISED[id(relationships)] = (relationships, tuple(relationships.items()))
    return relationships


def _is_normalised(relationships: Mapping[str, Any]) -> bool:
    """Whether ``relationships`` is a mapping :func:`_normalised` recorded, holding the same rows."""
    entry = _NORMALISED.get(id(relationships))
    if entry is None or entry[0] is not relationships or len(relationships) != len(entry[1]):
        return False
    return all(relationships.get(rel) is rows for rel, rows in entry[1])


@dataclass(frozen=True)
class Scene:
    """A CLEVR-POC scene graph (complete or partial).

    Attributes:
        objects: the objects, index = object id.
        relationships: ``relationships[rel][i]`` = ids j such that j is ``rel`` of i, for rel in
            left/right/front/behind. May be empty (unknown) for a scene without a layout.
        split, image_index, image_filename: dataset bookkeeping (may be None).
        extra: other top-level keys (none of the typed ones below), kept verbatim.
        environment_id: ``constraint_type_index``, the id of the scene's environment (generate), or None.
        generation: ``generation``, what generating the example cost (complete scenes of ``generate``).
        image: ``camera`` and ``render``, how the scene's image was made (render; perception: camera).
        perception: ``perception``, how the scene was perceived (perceived scenes).

    Only objects, relationships and the bookkeeping take part in ``==``.
    """

    objects: tuple[SceneObject, ...]
    relationships: Mapping[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    split: str | None = None
    image_index: int | None = None
    image_filename: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    environment_id: int | None = field(default=None, compare=False)
    generation: GenerationCounts | None = field(default=None, compare=False)
    image: ImageInfo | None = field(default=None, compare=False)
    perception: PerceptionInfo | None = field(default=None, compare=False)
    #: the order of the keys when read from a file (files round-trip exactly)
    json_spelling: JsonSpelling = field(default=None, compare=False, hash=False,  # type: ignore[assignment]
                                        repr=False)

    @property
    def camera(self) -> Camera | None:
        """The camera the scene's image was taken with (``image.camera``; the scene JSON's ``camera``), or
        None: the one place a scene's camera is read."""
        return None if self.image is None else self.image.camera

    def __post_init__(self) -> None:
        typed = [k for k in self.extra if k in _TYPED_SCENE_KEYS or k in _SCENE_KEYS]
        if typed:
            raise ValueError(f"{typed[0]!r} is a field of Scene, not an 'extra' key")
        if self.json_spelling is None:
            object.__setattr__(self, "json_spelling", _NO_SPELLING)
        object.__setattr__(self, "objects", tuple(self.objects))
        relationships = self.relationships
        if not _is_normalised(relationships):
            relationships = _normalised(
                {rel: tuple([tuple(map(int, row)) for row in rows]) for rel, rows in relationships.items()})
        object.__setattr__(self, "relationships", relationships)

    def __len__(self) -> int:
        return len(self.objects)

    # ------------------------------------------------------------------ ASP
    def to_asp_facts(self) -> str:
        """ASP facts: ``hasProperty(i,P,V).`` for the four attributes, ``at(i,R).`` and ``rel(i,j).``
        for every j in ``relationships[rel][i]`` (SEMANTICS: scene facts). ``object/1`` facts are not
        emitted: the environment's ``object(0..N-1)`` declares every object, the hidden one included.

        The text of the symbols the solver gets (:func:`clevr_poc.solver.programs.scene_fact_groups`,
        formatted by :func:`~clevr_poc.solver.programs.scene_facts_text` without making them):
        one line per object (``hasProperty(0,color,red). ... at(0,1).``), then one per relation row, each
        line ending in a newline (an empty scene: one newline).
        """
        from clevr_poc.solver.programs import scene_facts_text  # clingo only when needed

        return scene_facts_text(self)

    # ------------------------------------------------------------------ derived scenes
    def without_object(self, index: int) -> "Scene":
        """The partial scene: object ``index`` removed, the others renumbered ``0..N-2`` in order,
        relationships filtered and renumbered; every other field as in this scene (``extra`` copied).

        The same scene as ``dataclasses.replace(self, objects=..., relationships=..., extra=...)``
        (tested), without replace's walk over the fields (issue 27: the question generator makes one
        per question): ``__post_init__`` would check ``extra`` and ``json_spelling``, which stay as they
        were checked, and keep the relationships, made here in their final form."""
        if not 0 <= index < len(self.objects):
            raise IndexError(f"object {index} not in a scene of {len(self.objects)} objects")

        objects = self.objects[:index] + self.objects[index + 1:]
        relationships = _normalised({  # ints in tuples already: Scene need not convert them again
            rel: tuple([tuple([j - 1 if j > index else j for j in row if j != index])
                        for row in rows[:index] + rows[index + 1:]])
            for rel, rows in self.relationships.items()
        })
        partial = object.__new__(type(self))
        partial.__dict__.update(self.__dict__, objects=objects, relationships=relationships, extra=dict(self.extra))
        return partial

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "Scene":
        """Build from an official scene JSON document; raises :class:`FormatError` naming the field."""
        if not isinstance(data, Mapping):
            raise FormatError("a scene must be a JSON object", source=source, value=type(data).__name__)
        if "objects" not in data:
            raise FormatError("missing key", source=source, field="objects")
        raw_objects = data["objects"]
        if not isinstance(raw_objects, list):
            raise FormatError("must be a list", source=source, field="objects", value=type(raw_objects).__name__)
        if len(raw_objects) > limits.cap("objects_per_scene"):
            raise FormatError(f"{len(raw_objects):,} objects is over {limits.describe('objects_per_scene')}",
                              source=source, field="objects")
        objects = tuple(SceneObject.from_json(o, source=source, index=i) for i, o in enumerate(raw_objects))
        relationships: dict[str, tuple[tuple[int, ...], ...]] = {}
        raw_rel = data.get("relationships", {})
        if not isinstance(raw_rel, Mapping):
            raise FormatError("must be an object", source=source, field="relationships", value=raw_rel)
        for rel, rows in raw_rel.items():
            if rel not in domain.RELATIONS:
                raise FormatError(f"unknown relation; expected one of {list(domain.RELATIONS)}",
                                  source=source, field="relationships", value=rel)
            if not isinstance(rows, list) or len(rows) != len(objects):
                raise FormatError(f"must be a list of {len(objects)} lists (one per object)",
                                  source=source, field=f"relationships.{rel}", value=rows)
            parsed = []
            for i, row in enumerate(rows):
                if not isinstance(row, list) or not all(
                    isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(objects) and j != i for j in row
                ):
                    raise FormatError(f"must list object ids 0..{len(objects) - 1} other than {i}",
                                      source=source, field=f"relationships.{rel}[{i}]", value=row)
                parsed.append(tuple(row))
            relationships[rel] = tuple(parsed)
        image_index = data.get("image_index")
        if image_index is not None and (not isinstance(image_index, int) or isinstance(image_index, bool)):
            raise FormatError("must be an integer", source=source, field="image_index", value=image_index)
        split = data.get("split")
        if split is not None and not isinstance(split, str):
            raise FormatError("must be a string", source=source, field="split", value=split)
        image_filename = _file_name(data.get("image_filename"), source, "image_filename")
        environment_id = data.get("constraint_type_index")
        as_text = environment_id if isinstance(environment_id, str) and environment_id.strip().isdigit() else None
        if as_text is not None:
            environment_id = int(as_text)
        elif environment_id is not None and (not isinstance(environment_id, int) or isinstance(environment_id, bool)):
            raise FormatError("must be an integer (the environment id)", source=source, field="constraint_type_index",
                              value=environment_id)
        generation = data.get("generation")
        perception = data.get("perception")
        extra = {k: v for k, v in data.items() if k not in _SCENE_KEYS and k not in _TYPED_SCENE_KEYS}
        return cls(objects, relationships, split, image_index, image_filename, extra,
                   environment_id=environment_id,
                   generation=None if generation is None else GenerationCounts.from_json(generation, source=source),
                   image=ImageInfo.from_json_items(data, source=source),
                   perception=None if perception is None else PerceptionInfo.from_json(perception, source=source),
                   json_spelling=JsonSpelling(tuple(data.keys()), environment_id_text=as_text))

    def to_json(self) -> dict[str, Any]:
        """The official JSON document (keys in the order they were read, when read from a file; else the
        bookkeeping, objects, relationships, ``extra``'s keys, then ``constraint_type_index``,
        ``generation``, ``camera``, ``render``, ``perception``)."""
        order = self.json_spelling.key_order
        data: dict[str, Any] = {}
        if self.split is not None:
            data["split"] = self.split
        if self.image_index is not None:
            data["image_index"] = self.image_index
        if self.image_filename is not None:
            data["image_filename"] = self.image_filename
        data["objects"] = [o.to_json() for o in self.objects]
        data["relationships"] = {rel: [list(row) for row in rows] for rel, rows in self.relationships.items()}
        data.update(self.extra)
        text = self.json_spelling.environment_id_text
        if text is not None and self.environment_id == int(text):
            data["constraint_type_index"] = text
        elif self.environment_id is not None or "constraint_type_index" in order:
            data["constraint_type_index"] = self.environment_id
        if self.generation is not None:
            data["generation"] = self.generation.to_json()
        if self.image is not None:
            data.update(self.image.to_json_items())
        if self.perception is not None:
            data["perception"] = self.perception.to_json()
        if order:
            data = {k: data[k] for k in order if k in data} | {k: v for k, v in data.items() if k not in order}
        return data

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Scene":
        """Read an official scene JSON file (complete or incomplete).

        Raises:
            FormatError: naming the file (and field): missing or unreadable, over the
                ``scene_file_bytes`` cap (checked before reading) or the ``objects_per_scene`` cap
                (:mod:`clevr_poc.limits`), invalid JSON, or any field outside the format.
        """
        return cls.from_json(read_json(path, cap="scene_file_bytes", what="a scene file"), source=Path(path))

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        """Write the official JSON atomically (temp file + rename)."""
        return atomic_write_json(path, self.to_json())

    @classmethod
    def from_objects(cls, objects: Iterable[SceneObject], **kwargs: Any) -> "Scene":
        return cls(tuple(objects), **kwargs)


def compute_relationships(points: "Iterable[tuple[float, float]]") -> dict[str, tuple[tuple[int, ...], ...]]:
    """Relationships from world x/y positions with the official CLEVR-POC convention.

    ``left[i]`` = objects with smaller x than object i, ``right[i]`` = larger x, ``front[i]`` =
    smaller y, ``behind[i]`` = larger y. Ties (equal coordinates) put the pair in neither list.

    Args:
        points: (x, y) world coordinates per object, in world units.

    Returns:
        ``rel -> tuple of per-object tuples``, in the form a :class:`Scene` stores (a Scene made from it
        keeps it as it is, unless it was changed since).
    """
    # issue 27 (every layout computes them): when each axis's values are strictly ordered (no ties, no NaN;
    # always the case for placed objects) one sort per axis gives both lists of every object
    # (:func:`_axis_relations`; 0.57x the CPU time on the 2,747 layouts of the benchmark's first 1,000 examples,
    # 24 against 42 ms); otherwise list comprehensions over (index, coordinate) pairs
    pts = list(points)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    by_x = _axis_relations(xs)
    by_y = _axis_relations(ys) if by_x is not None else None
    if by_y is not None:
        return _normalised({"left": by_x[0], "right": by_x[1], "front": by_y[0], "behind": by_y[1]})
    # ``j != i`` needs no test, as ``x < x`` is false (NaN included)
    ex, ey = list(enumerate(xs)), list(enumerate(ys))
    rel = {"left": tuple([tuple([j for j, xj in ex if xj < x]) for x in xs]),
           "right": tuple([tuple([j for j, xj in ex if xj > x]) for x in xs]),
           "front": tuple([tuple([j for j, yj in ey if yj < y]) for y in ys]),
           "behind": tuple([tuple([j for j, yj in ey if yj > y]) for y in ys])}
    return _normalised({r: rel[r] for r in domain.RELATIONS})


def _axis_relations(values: list) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]] | None:
    """``(smaller, larger)``: ``smaller[i]`` = the indices j (ascending) with ``values[j] < values[i]``,
    ``larger[i]`` those with ``values[j] > values[i]``; None unless the sorted values are strictly increasing
    (a tie or a NaN: the caller compares every pair instead). The indices in sorted order give each object's
    lists as the ones before and after it, kept ascending with ``insort``."""
    ranked = sorted(values)
    if not all(map(operator.lt, ranked, ranked[1:])):
        return None
    order = sorted(range(len(values)), key=values.__getitem__)
    smaller = [()] * len(values)
    larger = [()] * len(values)
    below: list[int] = []
    for k in order:
        smaller[k] = tuple(below)
        bisect.insort(below, k)
    above: list[int] = []
    for k in reversed(order):
        larger[k] = tuple(above)
        bisect.insort(above, k)
    return tuple(smaller), tuple(larger)
