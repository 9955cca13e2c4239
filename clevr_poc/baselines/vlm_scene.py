"""The scene a VLM lists (prompt ``list-then-reason``): parsing it and scoring it like perception.

Parsing (:func:`parse_listed_objects`): the last ``<objects>...</objects>`` block of the reply must be a JSON
list of objects with ``color``, ``shape``, ``size``, ``material`` (CLEVR words and synonyms, as the answer
parser reads them: ``big`` -> large, ``ball`` -> sphere, ``shiny`` -> metal, ...) and ``region`` (0-3, int
or digit string). At most :data:`MAX_LISTED_OBJECTS` objects. Anything else is a listing failure (counted,
never repaired).

Scoring (:func:`listing_metrics`) against the gold partial scene (the visible objects). The perception
metrics of :mod:`clevr_poc.perception.evaluation` match detections by box overlap; a listed object has no
box, so objects are matched here by attributes instead: the one-to-one assignment of listed to true objects
that maximises the number of agreeing fields (4 attributes + region; Hungarian algorithm,
``scipy.optimize.linear_sum_assignment``). Metrics, over the replies whose listing parsed:

* ``count_exact``: share of images where the number of listed objects equals the number of visible ones;
  ``count_error``: mean absolute difference;
* ``detection``: precision and recall of listed objects whose 4 attributes equal those of their assigned
  true object (the identity of a CLEVR object: no two objects share all 4);
* ``attributes``: per-attribute accuracy over the assigned pairs; ``region``: region accuracy over them;
* ``scene_exact``: share of images whose listed objects equal the visible ones (4 attributes + region) as sets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from clevr_poc import domain

#: Most objects a listing may have (a CLEVR-POC scene has at most 10).
MAX_LISTED_OBJECTS = 30
FIELDS: tuple[str, ...] = (*domain.ATTRIBUTES, "region")
_BLOCK = re.compile(r"<objects>(.*?)</objects>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ListedObject:
    """One object of a listing: the four attribute values and the region (0-3)."""

    color: str
    shape: str
    size: str
    material: str
    region: int

    def field(self, name: str) -> Any:
        return getattr(self, name)


@dataclass(frozen=True)
class Listing:
    """A parsed listing: ``objects`` (None when it did not parse) and ``error`` (why)."""

    objects: tuple[ListedObject, ...] | None
    error: str | None = None


def _value(raw: object, attribute: str) -> str | None:
    from clevr_poc.baselines.llm_standalone import VALUE_WORDS

    if not isinstance(raw, str):
        return None
    value = VALUE_WORDS.get(raw.strip().lower())
    return value if value in domain.DOMAINS[attribute] else None


def parse_listed_objects(reply: str | None) -> Listing:
    """The objects of the last ``<objects>[...]</objects>`` block of ``reply`` (rules in the module docstring)."""
    if not reply:
        return Listing(None, "empty reply")
    blocks = _BLOCK.findall(reply)
    if not blocks:
        return Listing(None, "no <objects>...</objects> block")
    try:
        data = json.loads(blocks[-1])
    except (ValueError, RecursionError):  # invalid JSON, a 5,000-digit integer, 100,000 nested brackets
        return Listing(None, "the objects block is not JSON")
    if not isinstance(data, list):
        return Listing(None, "the objects block is not a JSON list")
    if len(data) > MAX_LISTED_OBJECTS:
        return Listing(None, f"more than {MAX_LISTED_OBJECTS} objects")
    objects = []
    for item in data:
        if not isinstance(item, dict):
            return Listing(None, "an object is not a JSON object")
        values = {a: _value(item.get(a), a) for a in domain.ATTRIBUTES}
        bad = [a for a, v in values.items() if v is None]
        if bad:
            return Listing(None, f"unknown or missing {bad[0]}")
        region = item.get("region")
        if isinstance(region, str) and region.strip().isdigit():
            region = int(region.strip())
        if isinstance(region, bool) or not isinstance(region, int) or region not in domain.REGIONS:
            return Listing(None, "region must be 0, 1, 2 or 3")
        objects.append(ListedObject(region=region, **values))
    return Listing(tuple(objects))


def truth_objects(scene: Any) -> tuple[ListedObject, ...]:
    """The visible objects of a gold scene as :class:`ListedObject` values."""
    return tuple(ListedObject(o.color, o.shape, o.size, o.material, int(o.region)) for o in scene.objects)


def assign(listed: Sequence[ListedObject], truth: Sequence[ListedObject]) -> list[tuple[int, int]]:
    """One-to-one pairs (listed index, truth index) maximising the number of agreeing fields."""
    if not listed or not truth:
        return []
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    agree = np.array([[sum(a.field(f) == b.field(f) for f in FIELDS) for b in truth] for a in listed])
    rows, cols = linear_sum_assignment(-agree)
    return [(int(r), int(c)) for r, c in zip(rows, cols)]


def listing_metrics(replies: Sequence[str | None], scenes: Sequence[Any]) -> dict[str, Any]:
    """Score the listings of ``replies`` against the gold partial ``scenes`` (one per reply).

    Returns:
        ``{"images", "listed", "listing_failures", "failure_reasons", "count_exact", "count_error",
        "detection": {"precision", "recall"}, "attributes": {attribute: accuracy}, "region", "scene_exact"}``;
        ratios are rounded to 4 places, None where nothing was counted.
    """
    if len(replies) != len(scenes):
        raise ValueError(f"{len(replies)} replies for {len(scenes)} scenes")
    listed_images = count_exact = scene_exact = 0
    count_errors: list[int] = []
    tp = n_listed = n_truth = matched = region_right = 0
    attribute_right = {a: 0 for a in domain.ATTRIBUTES}
    reasons: dict[str, int] = {}
    for reply, scene in zip(replies, scenes):
        listing = parse_listed_objects(reply)
        if listing.objects is None:
            reasons[listing.error or "?"] = reasons.get(listing.error or "?", 0) + 1
            continue
        truth = truth_objects(scene)
        listed = listing.objects
        listed_images += 1
        count_exact += len(listed) == len(truth)
        count_errors.append(abs(len(listed) - len(truth)))
        scene_exact += sorted(map(repr, listed)) == sorted(map(repr, truth))
        n_listed += len(listed)
        n_truth += len(truth)
        for i, j in assign(listed, truth):
            a, b = listed[i], truth[j]
            matched += 1
            same = [a.field(f) == b.field(f) for f in domain.ATTRIBUTES]
            for attribute, ok in zip(domain.ATTRIBUTES, same):
                attribute_right[attribute] += ok
            region_right += a.region == b.region
            tp += all(same)

    def ratio(x: float, y: float) -> float | None:
        return round(x / y, 4) if y else None

    return {
        "images": len(replies), "listed": listed_images, "listing_failures": len(replies) - listed_images,
        "failure_reasons": dict(sorted(reasons.items())),
        "count_exact": ratio(count_exact, listed_images),
        "count_error": ratio(sum(count_errors), len(count_errors)),
        "detection": {"precision": ratio(tp, n_listed), "recall": ratio(tp, n_truth)},
        "attributes": {a: ratio(v, matched) for a, v in attribute_right.items()},
        "region": ratio(region_right, matched),
        "scene_exact": ratio(scene_exact, listed_images),
    }


def format_listing_metrics(metrics: dict[str, Any]) -> str:
    """One-line summary for the command line."""
    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    attributes = ", ".join(f"{a} {pct(v)}" for a, v in metrics["attributes"].items())
    return (f"listed scenes: {metrics['listed']} of {metrics['images']} parsed ({metrics['listing_failures']} listing "
            f"failures); count exact {pct(metrics['count_exact'])}, precision {pct(metrics['detection']['precision'])}, "
            f"recall {pct(metrics['detection']['recall'])}, {attributes}, region {pct(metrics['region'])}, "
            f"scene exact {pct(metrics['scene_exact'])}")


__all__ = ["FIELDS", "Listing", "ListedObject", "MAX_LISTED_OBJECTS", "assign", "format_listing_metrics",
           "listing_metrics", "parse_listed_objects", "truth_objects"]
