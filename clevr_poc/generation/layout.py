"""3D layout of a complete scene graph: world coordinates, rotations and spatial relationships.

Every object is placed on the ground plane inside its region's box (:data:`clevr_poc.domain.REGION_BOXES`,
official ``properties.json``): the whole disc of radius r = :data:`clevr_poc.domain.SIZE_RADIUS` [size]
(0.39 / 0.58 / 1.0 world units for small / medium / large) lies inside the box, the centre rests at
height z = r, and the object gets a random rotation in degrees (CLEVR's ``rotation``, kept in
``SceneObject.rotation``). As in CLEVR's ``render_images.py``:

- no overlaps: the centres of objects i and j are more than ``r_i + r_j + min_distance`` apart;
- unambiguous directions: for every pair, ``|x_i - x_j| >= margin`` and ``|y_i - y_j| >= margin``
  (CLEVR-POC's relations are world-axis relations, see :func:`clevr_poc.scene.compute_relationships`,
  so its direction-margin check is a check of both coordinate differences).

The relationships follow from the coordinates (``left[i]`` = objects with smaller x, ``front[i]`` =
smaller y). Because every centre lies inside its own region's box, they always agree with the
background's region adjacency (``right_R``/``front_R``, Appendix A lines 11-20): an object right of an
object in region 1 (x >= 0.5) also has x > 0.5, so it is in region 1 or 3, and so on.

Placement never hangs: each object gets at most ``max_attempts_per_object`` random positions, a failed
object refills its region (bounded), a region that cannot be filled restarts the whole placement
(bounded), and then :class:`PlacementError` is raised so that the caller can draw another scene graph.

**Visibility** (:class:`VisibilityCheck`, used by the dataset generator): a placed scene is also checked
from the camera that will render it (:func:`clevr_poc.rendering.scene_camera` of the image's render seed,
:func:`clevr_poc.rendering.batch_render.image_seed`), with the renderer's own ray-cast masks
(:func:`clevr_poc.rendering.instance_index_map` over the very meshes Blender draws; no Blender needed):
every object that the image shows must cover at least ``min_pixels`` pixels (the renderer's default
threshold, :func:`clevr_poc.rendering.default_min_pixels`: 53 at the default 320 x 320). A failing layout is
re-placed (the generator's bounded retries), as CLEVR's ``render_images.py`` does for its 200-pixel rule.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping

import numpy as np

from clevr_poc import domain
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.generation.bound_solids import scene_bound_array
from clevr_poc.generation.pixel_bounds import (  # noqa: F401  (visible_pixel_bounds: part of this module's API)
    SILHOUETTE_DIRECTIONS, boxes_meet, lower_bounds, silhouette_box, stacked_silhouettes, vertex_silhouettes,
    visible_pixel_bounds,
)
from clevr_poc.generation.pixel_upper_bounds import upper_bounds
# the check's geometry, imported once (issue 27: four imports per check and four per undecided layout cost
# about 5 microseconds each time; clevr_poc.rendering is imported with this module's package anyway)
from clevr_poc.rendering.masks import footprint_pixels, instance_index_map
from clevr_poc.rendering.ordered_map import hull_footprints, ordered_index_map
from clevr_poc.rendering.render import scene_meshes
from clevr_poc.scene import Scene, SceneObject, compute_relationships

#: Defaults of CLEVR's ``render_images.py`` (``--min_dist 0.25 --margin 0.4``).
DEFAULT_MIN_DISTANCE = 0.25
DEFAULT_MARGIN = 0.4


class PlacementError(ClevrPocError):
    """No layout found within the retry budget; draw another scene graph.

    Attributes:
        rejections: candidate positions rejected before giving up.
        restarts: whole-placement restarts before giving up.
    """

    def __init__(self, message: str, *, rejections: int = 0, restarts: int = 0) -> None:
        super().__init__(message)
        self.rejections = rejections
        self.restarts = restarts


@dataclass(frozen=True)
class LayoutResult:
    """A placed scene and what it cost.

    Attributes:
        scene: the input scene with ``coords_3d`` = (x, y, z) in world units per object,
            ``rotation`` in degrees [0, 360), and ``relationships`` computed from x/y.
        rejections: candidate positions rejected (all restarts included).
        restarts: whole-placement restarts (0 when the first pass succeeded).
        rejections_by_reason: ``{"overlap": k, "margin": m}``: the first rule a candidate broke, checked
            against the placed objects in turn (overlap before margin for each).
        region_restarts: refills of a single region.
    """

    scene: Scene
    rejections: int
    restarts: int
    rejections_by_reason: Mapping[str, int] = field(default_factory=dict)
    region_restarts: int = 0


def place_objects(scene: Scene, rng: random.Random, *, min_distance: float = DEFAULT_MIN_DISTANCE,
                  margin: float = DEFAULT_MARGIN, max_attempts_per_object: int = 30,
                  max_region_restarts: int = 10, max_restarts: int = 10) -> LayoutResult:
    """Place every object of a complete scene graph (see the module docstring for the rules).

    Regions are filled one after the other (the one with the largest total radius first), the objects
    of a region largest first, each at a uniformly random position in its box that fits with every
    object placed so far. When an object finds no place in ``max_attempts_per_object`` tries, its
    region is emptied and refilled (at most ``max_region_restarts`` times); when that fails too, the
    whole placement restarts (at most ``max_restarts`` times).

    Args:
        scene: objects with color/shape/size/material/region (coordinates and relationships, if any,
            are replaced).
        rng: the only source of randomness (same state -> same layout).
        min_distance: extra gap between two objects' discs, world units (CLEVR: 0.25).
        margin: minimum |dx| and |dy| between any two centres, world units (CLEVR: 0.4).
        max_attempts_per_object: random positions tried for one object before its region restarts.
        max_region_restarts: refills of one region before the whole placement restarts.
        max_restarts: restarts of the whole placement before giving up.

    Returns:
        :class:`LayoutResult`.

    Raises:
        FormatError: a negative distance/margin, a negative or zero budget, or a region not in 0..3.
        PlacementError: no layout within the budget (raised at once when an object cannot fit in its
            region's box at all). Worst case ``(max_restarts+1) * (max_region_restarts+1) * N *
            max_attempts_per_object`` candidate checks (each O(N)): about 0.1 s with the defaults.
    """
    if not (min_distance >= 0 and margin >= 0):
        raise FormatError("min_distance and margin must be >= 0", field="min_distance/margin",
                          value=(min_distance, margin))
    if max_attempts_per_object < 1 or max_region_restarts < 0 or max_restarts < 0:
        raise FormatError("max_attempts_per_object must be >= 1, max_region_restarts and max_restarts >= 0",
                          field="max_attempts_per_object/max_region_restarts/max_restarts",
                          value=(max_attempts_per_object, max_region_restarts, max_restarts))
    objects = scene.objects
    bounds = []                                             # per object: (x_lo, x_span, y_lo, y_span, r)
    for index, obj in enumerate(objects):
        bound = _BOUNDS.get((obj.region, obj.size))
        bounds.append(bound if bound is not None else _object_bounds(index, obj))
    radius = [bound[4] for bound in bounds]
    # fill order: regions by total radius (largest first), objects by radius; stable, so the layout is
    # a function of the rng state
    groups: dict[int, list[int]] = {}
    for i, obj in enumerate(objects):
        groups.setdefault(obj.region, []).append(i)
    region_order = sorted(groups, key=lambda g: (-sum(map(radius.__getitem__, groups[g])), g))
    fill = [sorted(groups[g], key=radius.__getitem__, reverse=True) for g in region_order]  # stable as well
    reaches = _reach_table(min_distance)
    rejected = {"overlap": 0, "margin": 0}
    region_restarts = 0
    placed_all = False
    restart = 0
    positions: dict[int, tuple[float, float, float]] = {}
    for restart in range(max_restarts + 1):
        positions = {}
        for members in fill:
            for attempt in range(max_region_restarts + 1):
                if _fill_region(members, positions, bounds, rng, reaches, margin, max_attempts_per_object,
                                rejected):
                    break
                for i in members:
                    positions.pop(i, None)
                if attempt < max_region_restarts:
                    region_restarts += 1
            else:
                break  # this region cannot be filled around the others: restart everything
        else:
            placed_all = True
            break
    if not placed_all:
        total = sum(rejected.values())
        raise PlacementError(
            f"no layout for {len(objects)} objects after {max_restarts} restarts ({total} rejected "
            f"positions; regions {[o.region for o in objects]}, sizes {[o.size for o in objects]})",
            rejections=total, restarts=max_restarts)
    # moved_object inlined: (x, y, r) is the centre's coords_3d; rotation = rng.uniform(0.0, 360.0)
    # (a copy of the object's field values, three replaced, set as the new object's __dict__: half the time of
    # ``__dict__.update`` into a new instance's empty dict; object.__setattr__ as the dataclasses are frozen)
    draw = rng.random
    new = object.__new__
    set_fields = object.__setattr__
    moved = []
    for i, obj in enumerate(objects):
        fields = obj.__dict__.copy()
        fields["coords_3d"] = positions[i]
        fields["pixel_coords"] = None
        fields["rotation"] = 0.0 + 360.0 * draw()
        copy = new(type(obj))
        set_fields(copy, "__dict__", fields)
        moved.append(copy)
    placed = placed_scene(scene, tuple(moved), compute_relationships([positions[i] for i in range(len(objects))]))
    result = new(LayoutResult)                              # LayoutResult(...) without the frozen __init__
    result.__dict__.update(scene=placed, rejections=sum(rejected.values()), restarts=restart,
                           rejections_by_reason=dict(rejected), region_restarts=region_restarts)
    return result


#: ``_BOUNDS[(region, size)]``: :func:`_object_bounds` of an object that fits its region's box, kept.
_BOUNDS: dict[tuple[int, str], tuple[float, float, float, float, float]] = {}


def _object_bounds(index: int, obj: SceneObject) -> tuple[float, float, float, float, float]:
    """``(x_lo, x_hi - x_lo, y_lo, y_hi - y_lo, r)``: where the centre of object ``index`` (radius r) may lie,
    ``x_lo = box.x_min + r``, ``x_hi = box.x_max - r`` (and y alike) in its region's box; kept in
    :data:`_BOUNDS`. Raises FormatError (region not in 0..3) or PlacementError (the object cannot fit)."""
    box = domain.REGION_BOXES.get(obj.region)
    if box is None:
        raise FormatError("region must be 0..3", field=f"objects[{index}].region", value=obj.region)
    r = domain.SIZE_RADIUS[obj.size]
    if box.x_max - box.x_min < 2 * r or box.y_max - box.y_min < 2 * r:
        raise PlacementError(f"object {index} ({obj.size}, radius {r}) does not fit in region {obj.region}")
    x_lo, x_hi, y_lo, y_hi = box.x_min + r, box.x_max - r, box.y_min + r, box.y_max - r
    bound = _BOUNDS[(obj.region, obj.size)] = (x_lo, x_hi - x_lo, y_lo, y_hi - y_lo, r)
    return bound


def placed_scene(scene: Scene, objects: tuple[SceneObject, ...],
                 relationships: dict[str, tuple[tuple[int, ...], ...]]) -> Scene:
    """``dataclasses.replace(scene, objects=objects, relationships=relationships)``, an equal scene with the
    same other field values (tested), without replace's walk over the fields and ``Scene.__post_init__``
    (issue 27: 13 % of a layout's time): the checks of ``extra`` and ``json_spelling`` hold as they were
    checked, ``objects`` is a tuple and ``relationships`` (:func:`compute_relationships`) already has the
    tuples of ints the normalisation would make."""
    fields = scene.__dict__.copy()
    fields["objects"] = objects
    fields["relationships"] = relationships
    placed = object.__new__(type(scene))
    object.__setattr__(placed, "__dict__", fields)        # frozen: a copy of the field values becomes its __dict__
    return placed


def moved_object(obj: SceneObject, coords_3d: tuple[float, float, float], rotation: float) -> SceneObject:
    """``dataclasses.replace(obj, coords_3d=coords_3d, pixel_coords=None, rotation=rotation)``, an equal
    object with the same other field values (tested), without replace's per-call walk over the fields
    (issue 27: a layout replaced every object this way). ``SceneObject.__post_init__`` checks only
    ``extra`` and ``json_spelling``, which stay as they were checked."""
    fields = obj.__dict__.copy()
    fields["coords_3d"] = coords_3d
    fields["pixel_coords"] = None
    fields["rotation"] = rotation
    moved = object.__new__(type(obj))
    object.__setattr__(moved, "__dict__", fields)         # frozen: a copy of the field values becomes its __dict__
    return moved


def _fill_region(members: list[int], positions: dict[int, tuple[float, float, float]], bounds: list,
                 rng: random.Random, reaches: dict, margin: float, attempts: int,
                 rejected: dict[str, int]) -> bool:
    """Place ``members`` one by one into ``positions`` (object -> (x, y, r)); False as soon as one finds no place.

    A candidate is ``(rng.uniform(x_lo, x_hi), rng.uniform(y_lo, y_hi))`` (its arithmetic inlined), checked
    against the placed objects in placement order: "overlap" when the centres are at most
    ``reach = r_i + r_j + min_distance`` apart (``math.hypot(dx, dy) <= reach``), else "margin" when ``|dx|``
    or ``|dy|`` is under ``margin``; the first rule broken is counted in ``rejected``. ``reaches`` is
    :func:`_reach_table` of ``min_distance``.

    Issue 27 (this loop is most of a layout's time: 430,000 candidates for the benchmark's first 1,000
    examples, most rejected by the first placed object): the overlap test compares ``dx*dx + dy*dy`` with
    ``reach**2 * (1 -+ 1e-9)`` and calls ``hypot`` only in between, where the two could disagree (the sum
    of squares is within 3e-16 of ``dx**2 + dy**2`` relatively, ``hypot`` within 1 ulp: outside the band
    they cannot); ``|dx| < margin`` is the chained ``-margin < dx < margin``; the first placed object is
    checked outside the inner loop. The same booleans for every candidate, hence the same draws, positions
    and counts (``tests/test_placement_reference.py`` replays the plain loop). With the bounds kept per
    (region, size), the objects' field values copied as a whole and :func:`compute_relationships` by sorting,
    :func:`place_objects` takes 0.81x the CPU time it took (214 against 265 ms for the benchmark's first
    1,000 examples' 2,753 layouts, each call replayed through both versions, minimum of 5, load 2.5-3)."""
    draw = rng.random
    hypot = math.hypot
    low = -margin
    overlaps = margins = 0                                  # counted locally, added to ``rejected`` at the end
    placed = True
    for i in members:
        x_lo, x_span, y_lo, y_span, r = bounds[i]
        if not positions:                                   # nothing to avoid: the first candidate fits
            positions[i] = (x_lo + x_span * draw(), y_lo + y_span * draw(), r)
            continue
        limits = reaches[r]
        others = [(xj, yj) + limits[rj] for xj, yj, rj in positions.values()]
        (x0, y0, inner0, outer0, reach0), rest = others[0], others[1:]
        for _ in range(attempts):
            x = x_lo + x_span * draw()                      # random.Random.uniform(x_lo, x_hi)
            y = y_lo + y_span * draw()
            dx = x - x0
            dy = y - y0
            square = dx * dx + dy * dy
            if square <= outer0 and (square < inner0 or hypot(dx, dy) <= reach0):
                overlaps += 1
                continue
            if low < dx < margin or low < dy < margin:
                margins += 1
                continue
            for xj, yj, inner, outer, reach in rest:
                dx = x - xj
                dy = y - yj
                square = dx * dx + dy * dy
                if square <= outer and (square < inner or hypot(dx, dy) <= reach):
                    overlaps += 1
                    break
                if low < dx < margin or low < dy < margin:
                    margins += 1
                    break
            else:
                positions[i] = (x, y, r)
                break
        else:
            placed = False
            break
    rejected["overlap"] += overlaps
    rejected["margin"] += margins
    return placed


#: Relative half-width of the band around ``reach**2`` where :func:`_fill_region` asks ``math.hypot``.
_REACH_SLACK = 1e-9
_REACH_TABLES: dict[float, dict[float, dict[float, tuple[float, float, float]]]] = {}


def _reach_table(min_distance: float) -> dict[float, dict[float, tuple[float, float, float]]]:
    """``table[r_i][r_j] = (reach**2 * (1 - 1e-9), reach**2 * (1 + 1e-9), reach)`` with ``reach = r_i + r_j +
    min_distance`` (the overlap distance of two objects, evaluated as before) for the radii of
    :data:`clevr_poc.domain.SIZE_RADIUS`, kept per ``min_distance``."""
    table = _REACH_TABLES.get(min_distance)
    if table is None:
        if len(_REACH_TABLES) >= 64:
            _REACH_TABLES.clear()
        radii = domain.SIZE_RADIUS.values()
        table = _REACH_TABLES[min_distance] = {r_i: {r_j: _reach_limits(r_i + r_j + min_distance) for r_j in radii}
                                               for r_i in radii}
    return table


def _reach_limits(reach: float) -> tuple[float, float, float]:
    square = reach * reach
    return square * (1 - _REACH_SLACK), square * (1 + _REACH_SLACK), reach


def relationships_consistent(scene: Scene) -> bool:
    """Whether every relation of ``scene`` agrees with the background's region adjacency
    (:data:`clevr_poc.domain.REGION_ADJACENCY`): for j in ``relationships[rel][i]``,
    ``(region_i, region_j)`` is in the ``rel`` table."""
    for rel, rows in scene.relationships.items():
        table = domain.REGION_ADJACENCY[rel]
        for i, row in enumerate(rows):
            for j in row:
                if (scene.objects[i].region, scene.objects[j].region) not in table:
                    return False
    return True


# ====================================================================== visibility from the render camera
#: Scopes of :class:`VisibilityCheck`: ``"both"`` = every object in the complete image (which implies
#: every visible object of the partial image), ``"partial"`` = the partial image only (the hidden object
#: may then be hidden behind another one in the complete image).
VISIBILITY_SCOPES: tuple[str, ...] = ("both", "partial")
#: Re-placements of one scene graph whose layout fails the visibility check, before the caller draws
#: another scene graph (the renderer's ``DEFAULT_MAX_RELAYOUTS``).
DEFAULT_VISIBILITY_RELAYOUTS = 10


@dataclass(frozen=True)
class VisibilityOutcome:
    """Result of :meth:`VisibilityCheck.check` on one layout.

    Attributes:
        ok: every object the checked image(s) show covers >= ``min_pixels`` pixels.
        pixels: visible pixels per object of the complete image (complete-scene indices); None when
            the check was asked for the decision only (``exact_pixels=False``) and the cheap bound
            (:func:`visible_pixel_bounds`) alone proved the layout passes.
        image: ``"complete"`` or ``"partial"``, the image that failed; None when ``ok``.
        offending: (object index in the *complete* scene, visible pixels in the failing image, reason)
            per object under the minimum; reason ``"occluded"`` (its unoccluded footprint is large
            enough) or ``"too_small"`` (out of view or tiny even unoccluded), as in the renderer's
            :class:`~clevr_poc.rendering.VisibilityReport`.
    """

    ok: bool
    pixels: tuple[int, ...] | None
    image: str | None = None
    offending: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True)
class VisibilityCheck:
    """Generation-time visibility check of a layout from the camera the renderer will use (no Blender).

    Attributes:
        scope: one of :data:`VISIBILITY_SCOPES`.
        min_pixels: visible pixels an object needs (>= 1); default (None) the renderer's default for the
            image size (:func:`clevr_poc.rendering.default_min_pixels`, 53 at 320 x 320).
        width, height: size of the rendered image in pixels (the renderer's defaults, 320 x 320); the
            camera's intrinsics and the pixel grid depend on it, so render at this size for the check to
            hold.
        max_relayouts: re-placements of one scene graph before giving up on it (>= 0).

    Raises:
        FormatError: an unknown scope, a non-positive size/threshold or a negative ``max_relayouts``.
    """

    scope: str = "both"
    min_pixels: int | None = None
    width: int | None = None
    height: int | None = None
    max_relayouts: int = DEFAULT_VISIBILITY_RELAYOUTS

    def __post_init__(self) -> None:
        from clevr_poc.rendering.render import DEFAULT_HEIGHT, DEFAULT_WIDTH, default_min_pixels

        if self.scope not in VISIBILITY_SCOPES:
            raise FormatError(f"visibility scope must be one of {list(VISIBILITY_SCOPES)}", field="scope",
                              value=self.scope)
        width = DEFAULT_WIDTH if self.width is None else self.width
        height = DEFAULT_HEIGHT if self.height is None else self.height
        minimum = default_min_pixels(width, height) if self.min_pixels is None else self.min_pixels
        for name, value in (("width", width), ("height", height), ("min_pixels", minimum)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FormatError(f"{name} must be a positive integer", field=name, value=value)
        if isinstance(self.max_relayouts, bool) or not isinstance(self.max_relayouts, int) or self.max_relayouts < 0:
            raise FormatError("max_relayouts must be an integer >= 0", field="max_relayouts",
                              value=self.max_relayouts)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "height", height)
        object.__setattr__(self, "min_pixels", minimum)

    def check(self, complete: Scene, hidden: int, camera_seed: int, *, exact_pixels: bool = True
              ) -> VisibilityOutcome:
        """Check the layout of ``complete`` (objects with ``3d_coords`` and ``rotation``) whose
        object ``hidden`` will be removed in the partial image, from the camera of ``camera_seed``
        (:func:`clevr_poc.rendering.scene_camera`, the renderer's camera for that seed and size).

        One ray-cast index map of the complete image decides the common case: removing an object only
        uncovers pixels (a pixel's nearest object stays the nearest), so objects that pass in the
        complete image pass in the partial one. Scope ``"both"`` needs every object >= ``min_pixels``
        in the complete image; scope ``"partial"`` accepts the hidden object under it and, when another
        object is under it, ray-casts the partial image (removing the hidden object may uncover it).

        Cost: about 25 ms of CPU at 320 x 240 with 5-9 objects, half of it the projected convex hulls
        (``benchmarks/visibility.py``, docs/rendering.md); the decision-only check below about 1 ms on
        average at 320 x 320 (5 ms for the full check; issue 27, ``benchmarks/visibility.py``), 0.74-0.78 ms
        with one BLAS thread on the 3,447 layouts of 2,000 benchmark examples after issue 27's sixth round
        (x0.92-0.94 of the fifth's, same process; docs/benchmarks.md).

        With ``exact_pixels=False`` (what the dataset generator uses) a cheap lower bound on every
        object's visible pixels (:func:`visible_pixel_bounds`, well under a millisecond) is tried first:
        when it already proves that every checked object covers ``min_pixels``, the outcome is
        ``ok`` with ``pixels=None`` and no ray is cast. The bound is provably conservative (it never
        exceeds the ray-cast count), so the decision (``ok``, ``image``, ``offending``) is always the
        one of the full check; only layouts the bound cannot decide are ray-cast.

        Raises:
            FormatError: an object without ``3d_coords`` or with a bad ``rotation``; ``hidden`` not an
                object index.
        """
        if not 0 <= hidden < len(complete.objects):
            raise FormatError("hidden must be an object index", field="hidden", value=hidden)
        camera = _camera(camera_seed, self.width, self.height)
        if not exact_pixels and self.scope == "both":
            # a few hundred inner and outer points per object (no Mesh), as :func:`vertex_silhouettes` of
            # :func:`scene_bound_points` (the same silhouettes) at one transform per object
            found = stacked_silhouettes(*scene_bound_array(complete), camera)
            if found is not None:
                count = len(complete.objects)
                bounds = lower_bounds(found, camera, count, range(count), enough=self.min_pixels)
                unsure = [k for k, b in enumerate(bounds) if b < self.min_pixels]
                if not unsure:
                    return VisibilityOutcome(True, None)
                return self._decide(complete, camera, found, unsure)
        meshes = scene_meshes(complete)
        if not exact_pixels:
            if self.scope == "partial":
                shown = [k for k in range(len(meshes)) if k != hidden]
                bounds = visible_pixel_bounds(meshes, camera, shown, self.min_pixels)
                if bounds is not None and all(bounds[k] >= self.min_pixels for k in shown):
                    return VisibilityOutcome(True, None)
        pixels = _visible_pixels(instance_index_map(meshes, camera), len(meshes))
        under = [k for k, p in enumerate(pixels) if p < self.min_pixels]
        image, failing, counts = "complete", under, pixels
        if self.scope == "partial" and under:
            if under == [hidden]:
                failing = []
            else:  # the hidden object may hide another one: ray-cast the partial image
                kept = [k for k in range(len(meshes)) if k != hidden]
                partial = _visible_pixels(instance_index_map([meshes[k] for k in kept], camera), len(kept))
                counts = [0] * len(meshes)
                for position, k in enumerate(kept):
                    counts[k] = partial[position]
                image = "partial"
                failing = [k for k in kept if counts[k] < self.min_pixels]
        if not failing:
            return VisibilityOutcome(True, tuple(pixels))
        offending = tuple((k, counts[k], "occluded" if footprint_pixels(meshes[k], camera) >= self.min_pixels
                           else "too_small") for k in failing)
        return VisibilityOutcome(False, tuple(pixels), image, offending)

    def _decide(self, complete: Scene, camera, found, unsure: list[int]) -> VisibilityOutcome:
        """Scope "both", objects ``unsure`` under the lower bound. First their upper bounds
        (:func:`~clevr_poc.generation.pixel_upper_bounds.upper_bounds`): an object at most ``min_pixels - 1``
        shows fails, its reason from its footprint's bounds (the footprint itself when they straddle the
        threshold); no pixel count is given for it (None). The rest are ray-cast: only them and the
        objects whose silhouette's bounding box meets one of theirs. Every object covering a pixel of
        such an object's mask is in that subset (kept in index order), so the subset's index map labels
        those pixels exactly as the full one does: their pixel counts, hence the failing objects and
        their reasons, are those of the full check; the others passed the bound. The map covers only the
        box of those objects' footprints (``instance_index_map(window=...)``: the same labels there), and
        :func:`~clevr_poc.rendering.ordered_map.ordered_index_map` gives it with rays cast only where the
        objects' order along the rays is not known from their positions (the same labels, tested)."""
        minimum = self.min_pixels
        meshes: dict = {}  # built when a ray or a footprint needs them

        def mesh(k: int):
            if k not in meshes:
                meshes[k] = scene_meshes(complete, indices=[k])[0]
            return meshes[k]
        offending = {}
        for k, (shown_max, footprint_min, footprint_max) in upper_bounds(found, camera, unsure).items():
            if shown_max < minimum:
                occluded = footprint_min >= minimum or (footprint_max >= minimum
                                                        and footprint_pixels(mesh(k), camera) >= minimum)
                offending[k] = (k, None, "occluded" if occluded else "too_small")
        unsure = [k for k in unsure if k not in offending]
        if unsure:
            boxes = {k: silhouette_box(silhouette[1]) for k, silhouette in found.items()}
            subset = sorted(set(unsure) | {j for j in boxes for k in unsure if boxes_meet(boxes[j], boxes[k])})
            own = dict(zip(unsure, hull_footprints([mesh(k) for k in unsure], camera)))
            # the index map of the unsure objects' footprint boxes only: their pixels, labelled as in the full map
            boxes_unsure = [footprint[0] for footprint in own.values() if footprint is not None]
            window = ((min(b[0] for b in boxes_unsure), max(b[1] for b in boxes_unsure),
                       min(b[2] for b in boxes_unsure), max(b[3] for b in boxes_unsure))
                      if boxes_unsure else (0, 0, 0, 0))
            others = [j for j in subset if j not in own]        # their footprints within the window only
            own.update(zip(others, hull_footprints([mesh(j) for j in others], camera, window)))
            footprints = [own[j] for j in subset]
            counts = _visible_pixels(ordered_index_map([mesh(j) for j in subset], camera, footprints, window),
                                     len(subset))
            for position, k in enumerate(subset):
                if k in unsure and counts[position] < minimum:
                    footprint = footprints[position]
                    area = 0 if footprint is None else int(footprint[1].sum())
                    offending[k] = (k, counts[position], "occluded" if area >= minimum else "too_small")
        if not offending:
            return VisibilityOutcome(True, None)
        return VisibilityOutcome(False, None, "complete", tuple(offending[k] for k in sorted(offending)))

    def to_json(self) -> dict:
        return {"scope": self.scope, "min_pixels": self.min_pixels, "width": self.width, "height": self.height,
                "max_relayouts": self.max_relayouts}


@lru_cache(maxsize=64)
def _camera(seed: int, width: int, height: int):
    """:func:`clevr_poc.rendering.scene_camera` (a frozen Camera), cached: the re-placements of one example
    are all checked from its one camera."""
    from clevr_poc.rendering.render import scene_camera

    return scene_camera(seed, width=width, height=height)


def _visible_pixels(index_map, count: int) -> list[int]:
    """Pixels per object index of an index map (:data:`clevr_poc.rendering.masks.BACKGROUND` ignored)."""
    return [int(c) for c in np.bincount(index_map[index_map >= 0].ravel(), minlength=count)[:count]]
