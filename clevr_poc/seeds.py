"""Derived random seeds: one 64-bit seed per (namespace, seed, parts), stable across Python versions,
processes and machines.

Every seeded draw of the benchmark generator that must not depend on the order of work or on the worker
count takes its seed from :func:`derive_seed`: environment ``k`` of :func:`clevr_poc.environments.sample_environments`
(namespace :data:`ENVIRONMENT`), the query attributes of a split and every attempt of an example of
:func:`clevr_poc.generation.dataset_writer.generate_dataset` (namespace :data:`DATASET`). Our own scheme
(the official generator seeds one global ``random`` per process); changing it changes every generated
file.
"""

from __future__ import annotations

import hashlib

__all__ = ["DATASET", "ENVIRONMENT", "derive_seed"]

#: Namespace of the seeds of sampled environments (parts: the environment index).
ENVIRONMENT = "environment"
#: Namespace of the dataset writer's seeds (parts: e.g. ``"example", env_id, local_index, attempt``).
DATASET = "dataset"


def derive_seed(namespace: str, seed: int, *parts: object) -> int:
    """A seed in ``0 .. 2**64 - 1``: the first 8 bytes (big-endian) of SHA-256 of the UTF-8 text
    ``"clevr-poc/<namespace>/<seed>/<part>/..."`` (every value written with ``str``).

    Args:
        namespace: what the seed is for (:data:`ENVIRONMENT`, :data:`DATASET`); different namespaces
            give unrelated seeds for the same ``seed`` and ``parts``.
        seed: the user's seed (any integer).
        parts: further values that identify the draw (indices, names).

    Returns:
        int, 64-bit unsigned.
    """
    text = "/".join(["clevr-poc", namespace, str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
