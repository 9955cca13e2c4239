"""The plan of a dataset: which environment, split, index and query attribute every example has.

**Plan.** ``environments x scenes_per_environment`` examples, exactly ``scenes_per_environment`` per
environment (paper §3.1: scenes uniformly distributed over the environments). Split sizes are the
largest-remainder quotas of the shares; the split labels are laid over the examples (environment-major)
by a low-discrepancy sequence, so every environment's scenes are split in the configured proportions
(+-1) and every split holds each environment about equally often. Within a split, examples are ordered
round-robin over environments. Query attributes (paper Appendix B: 40/40/10/10 %) get exact
largest-remainder quotas over the whole dataset, laid over the splits by the same kind of sequence (each
split within +-1 of its share) and shuffled within each split by a seeded shuffle
(:func:`clevr_poc.seeds.derive_seed`, namespace ``"dataset"``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterable, Mapping

from clevr_poc.generation.dataset_config import FILE_PATTERN, DatasetConfig
from clevr_poc.seeds import DATASET, derive_seed


@dataclass(frozen=True)
class ExampleSpec:
    """What one example is: which environment, which split and index, which query attribute.

    Attributes:
        environment_id: 0..E-1.
        local_index: the example's index within its environment, 0..S-1 (part of its seed).
        split: split name; image_index: 0-based index within the split.
        query_attribute: the attribute the question must ask about.
    """

    environment_id: int
    local_index: int
    split: str
    image_index: int
    query_attribute: str

    @property
    def file_name(self) -> str:
        return FILE_PATTERN % self.image_index

    @property
    def image_filename(self) -> str:
        return f"CLEVR_{self.split}_{self.image_index:06d}.png"


def largest_remainder(total: int, shares: Iterable[tuple[str, float]]) -> dict[str, int]:
    """Integer counts summing to ``total`` proportional to ``shares`` (Hamilton / largest remainder;
    ties go to the earlier name)."""
    shares = list(shares)
    exact = [(name, total * share) for name, share in shares]
    counts = {name: int(math.floor(x)) for name, x in exact}
    left = total - sum(counts.values())
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i][1] - math.floor(exact[i][1])), i))
    for i in order[:left]:
        counts[exact[i][0]] += 1
    return counts


def _low_discrepancy_labels(counts: Mapping[str, int]) -> list[str]:
    """A label sequence with exactly ``counts[name]`` of each label in which every prefix holds each
    label in proportion (+-1): at each step the label furthest below its target is emitted."""
    total = sum(counts.values())
    given = {name: 0 for name in counts}
    labels = []
    for step in range(1, total + 1):
        name = max(counts, key=lambda n: (counts[n] * step / total - given[n], -list(counts).index(n)))
        given[name] += 1
        labels.append(name)
    return labels


def plan_examples(config: DatasetConfig) -> list[ExampleSpec]:
    """Every example of the dataset, in (split, image_index) order; see the module docstring."""
    E, S = config.environments, config.scenes_per_environment
    split_counts = largest_remainder(config.total, config.splits)
    labels = _low_discrepancy_labels(split_counts)
    by_split: dict[str, list[tuple[int, int]]] = {name: [] for name in config.split_names}
    for position, label in enumerate(labels):  # environment-major positions
        by_split[label].append((position // S, position % S))
    ordered = [(name, sorted(by_split[name], key=lambda ek: (ek[1], ek[0]))) for name in config.split_names]
    # query attributes: exact global quotas laid over the splits by a low-discrepancy sequence (each split
    # within +-1 of its share), then shuffled within each split (decorrelated from the environment order)
    attributes = _low_discrepancy_labels(largest_remainder(config.total, config.query_shares))
    specs: list[ExampleSpec] = []
    start = 0
    for name, members in ordered:  # members in round-robin order over environments
        chunk = attributes[start:start + len(members)]
        start += len(members)
        random.Random(derive_seed(DATASET, config.seed, "query-attributes", name)).shuffle(chunk)
        for image_index, ((env, local), attribute) in enumerate(zip(members, chunk)):
            specs.append(ExampleSpec(env, local, name, image_index, attribute))
    return specs

