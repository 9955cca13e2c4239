"""Partial scenes: one object of a complete scene hidden (paper §3.3)."""

from __future__ import annotations

import random

from clevr_poc.errors import FormatError
from clevr_poc.scene import Scene, SceneObject


def choose_hidden(complete: Scene, rng: random.Random) -> int:
    """Index of the object to hide, uniform over ``0..N-1`` (paper §3.3: "randomly removing one of the
    objects").

    Raises:
        FormatError: the scene has no objects.
    """
    if len(complete) == 0:
        raise FormatError("cannot hide an object of an empty scene", field="objects", value=0)
    return rng.randrange(len(complete))


def make_partial(complete: Scene, hidden_index: int) -> tuple[Scene, SceneObject]:
    """The partial scene (object ``hidden_index`` removed, the others renumbered ``0..N-2`` in order,
    relationships filtered and renumbered) and the hidden object.

    Raises:
        IndexError: ``hidden_index`` is not an object id of ``complete``.
    """
    return complete.without_object(hidden_index), complete.objects[hidden_index]
