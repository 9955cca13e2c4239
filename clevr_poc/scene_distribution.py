"""``SceneDistribution``: several candidate scenes of one image with their probabilities.

What perception hands the Reasoner when answers carry probabilities (issue #24): the k most probable
perceived scenes consistent with the environment (:meth:`clevr_poc.perception.Perception.scene_distribution`)
with their normalised probabilities. A given (gold) scene is :meth:`SceneDistribution.certain`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clevr_poc.errors import FormatError
from clevr_poc.scene import Scene

#: Tolerance on the sum of the probabilities (they are normalised floats).
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SceneDistribution:
    """Candidate scenes of one image, most probable first.

    Attributes:
        scenes: the candidate partial scenes (>= 1), by descending probability; the first is the MAP scene.
        probabilities: their probabilities, each in [0, 1], summing to 1 (within :data:`SUM_TOLERANCE`).
        complete: every scene the decoder was asked to consider is here (False: the enumeration was cut,
            see :class:`~clevr_poc.perception.ranked_decoding.RankedDecoding`).

    Raises:
        FormatError: no scene, lengths that differ, a probability outside [0, 1], a sum that is not 1, or
            probabilities not in descending order.
    """

    scenes: tuple[Scene, ...]
    probabilities: tuple[float, ...]
    complete: bool = True

    def __post_init__(self) -> None:
        if not self.scenes or len(self.scenes) != len(self.probabilities):
            raise FormatError("needs one probability per scene and at least one scene", field="probabilities",
                              value=(len(self.scenes), len(self.probabilities)))
        if any(not (0.0 <= p <= 1.0) or math.isnan(p) for p in self.probabilities):
            raise FormatError("probabilities must lie in [0, 1]", field="probabilities", value=self.probabilities)
        if abs(sum(self.probabilities) - 1.0) > SUM_TOLERANCE:
            raise FormatError("probabilities must sum to 1", field="probabilities", value=sum(self.probabilities))
        if any(a < b for a, b in zip(self.probabilities, self.probabilities[1:])):
            raise FormatError("scenes must come most probable first", field="probabilities", value=self.probabilities)

    @classmethod
    def certain(cls, scene: Scene) -> "SceneDistribution":
        """One scene with probability 1 (a given scene, or a decoding without alternatives)."""
        return cls((scene,), (1.0,))

    @property
    def map_scene(self) -> Scene:
        """The most probable scene."""
        return self.scenes[0]

    def __len__(self) -> int:
        return len(self.scenes)


__all__ = ["SceneDistribution"]
