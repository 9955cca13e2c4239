"""The CLEVR-POC attribute vocabulary, regions and region adjacency.

Everything here is the closed world of the benchmark (paper §3 and Appendix A, lines 1-20 of the
background theory). Values are the lower-case ASP constants used in every file format.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

#: Attribute names in the order CLEVR scene JSON lists them.
ATTRIBUTES: tuple[str, ...] = ("color", "shape", "size", "material")

#: Attribute domains (paper §3; Appendix A lines 1-9). Order is the background theory's order.
COLORS: tuple[str, ...] = ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")
SHAPES: tuple[str, ...] = ("cube", "cylinder", "sphere", "cone")
SIZES: tuple[str, ...] = ("small", "medium", "large")
MATERIALS: tuple[str, ...] = ("rubber", "metal")

DOMAINS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"color": COLORS, "shape": SHAPES, "size": SIZES, "material": MATERIALS}
)

#: The 17 labels of the multi-label formulation (paper §4.1.1), in the paper's order.
LABELS: tuple[str, ...] = (
    "red", "blue", "green", "yellow", "cyan", "brown", "gray", "purple",
    "rubber", "metal", "large", "small", "medium", "cone", "cube", "cylinder", "sphere",
)

#: value -> attribute, e.g. ``"cone" -> "shape"``.
ATTRIBUTE_OF_VALUE: Mapping[str, str] = MappingProxyType(
    {value: attribute for attribute, values in DOMAINS.items() for value in values}
)

#: Scene regions (paper Fig. 1a). Region ids are the integers 0..3; scene JSON stores them as strings.
REGIONS: tuple[int, ...] = (0, 1, 2, 3)

#: Spatial relations of CLEVR scene graphs.
RELATIONS: tuple[str, ...] = ("left", "right", "front", "behind")


@dataclass(frozen=True)
class RegionBox:
    """Axis-aligned box of a region on the ground plane, in world units (Blender metres).

    ``x_min <= x <= x_max`` and ``y_min <= y <= y_max``; the official release's region boxes.
    """

    x_min: float
    x_max: float
    y_min: float
    y_max: float

    def contains(self, x: float, y: float) -> bool:
        return self.x_min <= x <= self.x_max and self.y_min <= y <= self.y_max


#: World x/y boxes of the four regions (official ``properties.json``): region 0 is back-left,
#: 1 back-right, 2 front-left, 3 front-right (y grows towards the back). The 0.5-wide strip
#: 0 < x < 0.5 belongs to no region.
REGION_BOXES: Mapping[int, RegionBox] = MappingProxyType(
    {
        0: RegionBox(-5.0, 0.0, 0.0, 5.0),
        1: RegionBox(0.5, 5.0, 0.0, 5.0),
        2: RegionBox(-5.0, 0.0, -5.0, 0.0),
        3: RegionBox(0.5, 5.0, -5.0, 0.0),
    }
)

#: ``right_R(R1, R2)``: an object to the right of an object in R1 may be in R2 (Appendix A, 11-14).
RIGHT_R: frozenset[tuple[int, int]] = frozenset(
    {(0, 0), (0, 1), (0, 2), (0, 3), (1, 1), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3), (3, 1), (3, 3)}
)
#: ``left_R(R1, R2) :- right_R(R2, R1)`` (Appendix A, line 15).
LEFT_R: frozenset[tuple[int, int]] = frozenset((b, a) for a, b in RIGHT_R)
#: ``front_R(R1, R2)``: an object in front of an object in R1 may be in R2 (Appendix A, 16-19).
FRONT_R: frozenset[tuple[int, int]] = frozenset(
    {(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3)}
)
#: ``behind_R(R1, R2) :- front_R(R2, R1)`` (Appendix A, line 20).
BEHIND_R: frozenset[tuple[int, int]] = frozenset((b, a) for a, b in FRONT_R)

REGION_ADJACENCY: Mapping[str, frozenset[tuple[int, int]]] = MappingProxyType(
    {"right": RIGHT_R, "left": LEFT_R, "front": FRONT_R, "behind": BEHIND_R}
)

#: Object radii in world units by size (official ``properties.json``).
SIZE_RADIUS: Mapping[str, float] = MappingProxyType({"small": 0.39, "medium": 0.58, "large": 1.0})

#: Official RGB colours (0-255) of the eight CLEVR colours.
COLOR_RGB: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {
        "gray": (87, 87, 87),
        "red": (173, 35, 35),
        "blue": (42, 75, 215),
        "green": (29, 105, 20),
        "brown": (129, 74, 25),
        "purple": (129, 38, 192),
        "cyan": (41, 208, 208),
        "yellow": (255, 238, 51),
    }
)

#: Surface words for values and relations in question text (CLEVR synonyms, plus ``medium``).
SYNONYMS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "thing": ("thing", "object"),
        "sphere": ("sphere", "ball"),
        "cube": ("cube", "block"),
        "cylinder": ("cylinder",),
        "cone": ("cone",),
        "large": ("large", "big"),
        "medium": ("medium", "medium-sized"),
        "small": ("small", "tiny"),
        "metal": ("metal", "metallic", "shiny"),
        "rubber": ("rubber", "matte"),
        "left": ("left of", "to the left of", "on the left side of"),
        "right": ("right of", "to the right of", "on the right side of"),
        "behind": ("behind",),
        "front": ("in front of",),
    }
)


def attribute_of(value: str) -> str:
    """Return the attribute (``color``/``shape``/``size``/``material``) a value belongs to.

    Raises:
        KeyError: ``value`` is not in any attribute domain.
    """
    try:
        return ATTRIBUTE_OF_VALUE[value]
    except KeyError:
        raise KeyError(f"{value!r} is not a CLEVR-POC attribute value") from None


def region_of_point(x: float, y: float) -> int | None:
    """The region whose box contains world point (x, y), or None (outside, or in the 0..0.5 gap)."""
    for region, box in REGION_BOXES.items():
        if box.contains(x, y):
            return region
    return None
