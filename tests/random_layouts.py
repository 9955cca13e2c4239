"""Random laid-out scenes for the geometry tests (pixel bounds, ordered map, visibility check)."""

from __future__ import annotations

import random
from typing import Iterator

from clevr_poc.environments import sample_environment
from clevr_poc.generation.layout import PlacementError, place_objects
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.scene import Scene
from clevr_poc.seeds import ENVIRONMENT, derive_seed


def random_layouts(environment_seed: int, rng_seed: int, per_environment: int,
                   environments: int = 3) -> Iterator[tuple[Scene, random.Random]]:
    """``per_environment`` placed complete scenes in each of ``environments`` sampled environments
    (environment k from ``derive_seed(ENVIRONMENT, environment_seed, k)``, its draws from
    ``random.Random(rng_seed + k)``; layouts that cannot be placed are drawn again). Yields each scene
    with that rng, which the caller may draw from (the camera, the hidden object) before the next one."""
    for env in range(environments):
        sampler = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, environment_seed, env), env_id=env))
        rng = random.Random(rng_seed + env)
        done = 0
        while done < per_environment:
            try:
                scene = place_objects(sampler.sample(rng), rng).scene
            except PlacementError:
                continue
            done += 1
            yield scene, rng
