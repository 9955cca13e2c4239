"""Where the NS-VQA model gets the partial scene of a dataset example: :class:`SceneSource`, with two
sources, the example's gold scene (:class:`GoldScenes`, the paper's "100% accuracy in image perception",
§4.3 RQ2) and perception from its rendered image (:class:`PerceivedScenes`, paper §4.1.2).

:class:`clevr_poc.pipeline.Pipeline` asks its source :meth:`SceneSource.scene_of` for every example it
answers; ``python -m clevr_poc demo`` shares one perceived scene per example between models
(:class:`clevr_poc.experiment.SharedSteps`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, runtime_checkable

from clevr_poc.answer_presupposition import scenes_to_search
from clevr_poc.camera import Camera
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.perception.cameras import DEFAULT_CAMERA_SOURCE, CameraSource, camera_spec, check_camera_source
from clevr_poc.scene import Scene

if TYPE_CHECKING:
    from pathlib import Path

    from clevr_poc.dataset_reader import Example
    from clevr_poc.scene_distribution import SceneDistribution

#: A perception model: ``perception(image, camera, environment) -> Scene`` (None: no scene), e.g.
#: :class:`clevr_poc.perception.Perception`. ``image``: a path, a PIL image or a uint8 (H, W, 3) array;
#: ``camera``: a :class:`Camera` or a preset name; ``environment``: for constraint-aware decoding, or None.
PerceptionFunction = Callable[..., "Scene | None"]


class SceneSourceKind(StrEnum):
    """The kind of a scene source, as written in model names (``"NS-VQA (<kind> scene, ...)"``)."""

    GIVEN = "given"
    PERCEPTION = "perception"


@runtime_checkable
class SceneSource(Protocol):
    """Gives the partial scene the NS-VQA model answers a dataset example with.

    Attributes:
        kind: :class:`SceneSourceKind`.
    """

    kind: SceneSourceKind

    def scene_of(self, example: "Example") -> Scene | None:
        """The partial scene of ``example``, or None when there is none (perception returned no Scene).

        Raises:
            ClevrPocError: why there is no scene (no rendered image, a camera missing, perception failed).
        """
        ...


class GoldScenes:
    """The example's own (gold) partial scene."""

    kind = SceneSourceKind.GIVEN

    def __repr__(self) -> str:
        return "GoldScenes()"

    def scene_of(self, example: "Example") -> Scene:
        return example.partial_scene


class PerceivedScenes:
    """The scene perception sees in the example's rendered image.

    Args:
        perception: the perception model (:data:`PerceptionFunction`).
        camera_source: the camera of images whose scene has none (:class:`CameraSource`; default ``auto``).
        constraint_decoding: decode within the example's environment (paper §5; default True) rather than
            by argmax.

    Raises:
        FormatError: an unknown camera source.
    """

    kind = SceneSourceKind.PERCEPTION

    def __init__(self, perception: PerceptionFunction, *, camera_source: CameraSource | str = DEFAULT_CAMERA_SOURCE,
                 constraint_decoding: bool = True) -> None:
        self.perception = perception
        self.camera_source = check_camera_source(camera_source)
        self.constraint_decoding = bool(constraint_decoding)

    def __repr__(self) -> str:
        return f"PerceivedScenes(camera_source={self.camera_source.value!r})"

    def camera_of(self, example: "Example") -> Camera | str:
        """The camera of the example's image (:func:`~clevr_poc.perception.cameras.camera_spec`: its scene's
        own, or a preset name, following ``camera_source``).

        Raises:
            FormatError: ``camera_source="from-scene"`` and the scene has no camera.
        """
        return camera_spec(example.partial_scene, self.camera_source,
                           source=example.scene_path or example.image_path)

    def environment_of(self, example: "Example") -> Environment | None:
        """The environment perception decodes in: the example's, None with argmax decoding."""
        return example.environment if self.constraint_decoding else None

    def scene_of(self, example: "Example") -> Scene | None:
        """``perception(image_path, camera, environment)`` (:meth:`camera_of`, :meth:`environment_of`).

        Raises:
            FormatError: the example has no rendered image; no camera (above).
            ClevrPocError: what perception raised.
        """
        scene = self.perception(self.image_of(example), self.camera_of(example), self.environment_of(example))
        return scene if isinstance(scene, Scene) else None

    def distribution_of(self, example: "Example", k: int) -> "SceneDistribution":
        """The ``k`` most probable scenes of the example's image consistent with its environment
        (``perception.scene_distribution``; camera as :meth:`camera_of`).

        Raises:
            FormatError: the example has no rendered image; no camera (above); ClevrPocError: what
                perception raised.
        """
        return self.perception.scene_distribution(self.image_of(example), self.camera_of(example), example.environment,
                                                  k=k)

    def searched_scenes_of(self, example: "Example", k: int) -> "SceneDistribution | Iterable[Scene]":
        """The scenes the question's presupposition searches for the example's image
        (:func:`clevr_poc.answer_presupposition.scenes_to_search`; camera as :meth:`camera_of`).

        Raises:
            as :meth:`distribution_of`.
        """
        return scenes_to_search(self.perception, self.image_of(example), self.camera_of(example),
                                example.environment, k)

    @staticmethod
    def image_of(example: "Example") -> "Path":
        """The example's rendered image.

        Raises:
            FormatError: the example has no rendered image.
        """
        if example.image_path is None:
            raise FormatError("the example has no rendered image (run python -m clevr_poc render)",
                              field="image_path")
        return example.image_path


__all__ = ["GoldScenes", "PerceivedScenes", "PerceptionFunction", "SceneSource", "SceneSourceKind"]
