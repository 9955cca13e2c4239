"""The reference for checking the scene sampler's uniformity, shared by ``tests/test_scenes.py`` and
``benchmarks/scenes.py`` (section 5): a small environment whose complete scenes clingo can enumerate,
and the chi-square tail against a uniform expectation."""

from __future__ import annotations

import math

from clevr_poc.environments import Constraint as C
from clevr_poc.environments import Environment

# Few object types (16 after the one-object constraints), so every complete scene can be enumerated.
SMALL_BASE: tuple[C, ...] = (
    C("generic", {"p1": "material", "v1": "metal"}),
    C("value_restriction", {"r": 0, "p1": "color", "v1": "red", "p2": "shape", "v2": "cube"}),
    C("value_restriction", {"r": 1, "p1": "color", "v1": "blue", "p2": "size", "v2": "small"}),
    C("value_restriction", {"r": 2, "p1": "shape", "v1": "sphere", "p2": "size", "v2": "large"}),
    C("negation_same_property", {"r": 2, "p1": "color", "v1": "gray", "v2": "brown"}),
    C("value_restriction", {"r": 3, "p1": "color", "v1": "green", "p2": "shape", "v2": "cone"}),
)


def small_environment() -> Environment:
    """N=4; 1824 complete scenes (76 sets of 4 objects): an exactly-N, an at-most and an at-least
    pair constraint on top of the strong one-object constraints of :data:`SMALL_BASE`."""
    return Environment(SMALL_BASE + (
        C("exactly_n", {"r": 2, "p1": "color", "v1": "red", "n": 1}),
        C("at_most_pairs", {"r1": 0, "r2": 3, "p1": "size", "n": 1}),
        C("at_least_pairs", {"r1": 0, "r2": 2, "p1": "size", "n": 1}),
    ), 4, id=101)


def chi_square_p_value(observed: list[int], expected: float) -> float:
    """Upper tail of the chi-square statistic of ``observed`` counts against the uniform expectation
    ``expected`` per cell (``len(observed) - 1`` degrees of freedom; Wilson-Hilferty approximation)."""
    dof = len(observed) - 1
    stat = sum((o - expected) ** 2 / expected for o in observed)
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))
