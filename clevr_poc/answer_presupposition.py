"""Answering from pixels under the question's presupposition: every CLEVR-POC question has an answer.

A CLEVR-POC question is generated so that its answer set is never empty (paper §3.3: the hidden object
is a real object of the complete scene, and it satisfies the question's description). When perception
misreads an object (a cube read as a cylinder, an object missed), the MAP scene can leave the question
without an answer: the query matches no completion of the scene within the environment, and the crisp
pipeline predicts the empty set, which is always wrong.

The presupposition is evidence about the scene. :func:`presupposed_answer` conditions on it: when the
answer on the MAP scene is empty, the k most probable scenes consistent with the environment
(:meth:`clevr_poc.perception.Perception.scene_distribution`, :func:`~clevr_poc.perception.ranked_decoding.ranked_decode`)
are answered in order of probability and the first with a non-empty answer is the prediction. This is
the ``map`` rule of the probabilistic answers with ``presuppose_answer=True``
(:func:`clevr_poc.reasoning.answer_distribution.answer_distribution`, ``docs/probabilistic_answers.md``:
``argmax_{s : A(s) != {}} P(s | image, environment)``), computed lazily: the ranked decoding runs only for
the questions the MAP scene leaves unanswered, so the common case costs nothing extra. When no scene among
the k answers, the k most probable scenes that may also hold the detector's weak detections (scores 0.05 to
0.2, :meth:`clevr_poc.perception.Perception.searched_scenes`) are searched the same way: an object the
detector saw only faintly (often an occluded one) is the usual reason why no scene of the confident
detections answers. When none of those answers either, the empty MAP answer stands.

Measured (``docs/benchmarks.md``, the release's look, 320 questions, r9): the crisp MAP pipeline 0.938
exact, the presupposition's answer 0.9625, the same as the ``map`` rule over k = 16 scenes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from clevr_poc.answer import Answer
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.scene_distribution import SceneDistribution

if TYPE_CHECKING:
    from clevr_poc.environments.environment import Environment
    from clevr_poc.reasoning.reasoner import QueryLike, Reasoner
    from clevr_poc.scene import Scene

#: Default number of scenes searched for one that answers: issue #24's default k
#: (:data:`clevr_poc.perception.ranked_decoding.DEFAULT_K`; ``0`` turns the search off).
DEFAULT_PRESUPPOSITION_K = 16
#: Most scenes searched (bounds the solver calls of one question: one ranked decoding + k answers).
MAX_PRESUPPOSITION_K = 256


class RankedPerception(Protocol):
    """What the presupposition needs of a perception: the ``k`` most probable scenes of an image that are
    consistent with the environment (a user's perception may offer only this)."""

    def scene_distribution(self, image: Any, camera: Any = None, environment: "Environment | None" = None, *,
                           k: int = DEFAULT_PRESUPPOSITION_K) -> SceneDistribution: ...


class SearchingPerception(RankedPerception, Protocol):
    """A :class:`RankedPerception` that also orders the scenes to search itself, lazily
    (:meth:`clevr_poc.perception.Perception.presupposition_scenes`: the candidates' k best scenes, then those
    that may also hold its weak detections)."""

    def presupposition_scenes(self, image: Any, camera: Any = None, environment: "Environment | None" = None, *,
                              k: int = DEFAULT_PRESUPPOSITION_K) -> "Iterable[Scene]": ...


def check_presupposition_k(k: Any) -> int:
    """``k`` as an int in ``[0, MAX_PRESUPPOSITION_K]`` (0: no search).

    Raises:
        FormatError: not an integer in range (naming the value).
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_PRESUPPOSITION_K:
        raise FormatError(f"must be an integer in [0, {MAX_PRESUPPOSITION_K}]", field="presupposition_k", value=k)
    return k


def can_search(perception: object, environment: "Environment | None", k: int) -> bool:
    """Whether :func:`presupposed_answer` can search: ``k >= 1``, an environment to decode in, and a
    :class:`RankedPerception` (one with ``scene_distribution``, as :class:`clevr_poc.perception.Perception`)."""
    return k >= 1 and environment is not None and callable(getattr(perception, "scene_distribution", None))


def presupposed_answer(reasoner: "Reasoner", environment: "Environment", query: "QueryLike",
                       distribution: "SceneDistribution | Iterable[Scene]", *, explain: bool = False) -> Answer | None:
    """The answer of the most probable scene of ``distribution`` in which ``query`` has a non-empty
    answer (module doc), or None when no scene has one. ``distribution``: a :class:`SceneDistribution`, or
    scenes in the order to try them (iterated lazily: :meth:`Perception.searched_scenes`).

    Args:
        reasoner: the :class:`~clevr_poc.reasoning.Reasoner` that answers each scene.
        environment: the example's environment.
        query: the (parsed or gold) ASP query.
        distribution: candidate scenes, most probable first.
        explain: attach the explanation to the answer returned (:meth:`Reasoner.explain`).

    Raises:
        as :meth:`Reasoner.answer` (unsafe query, a scene that does not fit, a solver time-out).
    """
    checked = reasoner.sanitize(query)
    scenes = distribution.scenes if isinstance(distribution, SceneDistribution) else distribution
    for scene in scenes:
        answer = reasoner.answer(environment, scene, checked)
        if answer.values:
            return reasoner.explain(environment, scene, checked) if explain else answer
    return None


def searched_answer(reasoner: "Reasoner", environment: "Environment", query: "QueryLike",
                    distribution: "Callable[[], SceneDistribution | Iterable[Scene]]", *,
                    explain: bool = False) -> Answer | None:
    """:func:`presupposed_answer` over ``distribution()`` (a function giving the :class:`SceneDistribution`
    or the scenes, called only here), or None when no scene answers or the search fails (a perception or solver error:
    the caller keeps its MAP answer)."""
    try:
        return presupposed_answer(reasoner, environment, query, distribution(), explain=explain)
    except ClevrPocError:
        return None


def scenes_to_search(perception: "SearchingPerception | RankedPerception", image: Any, camera: Any,
                     environment: "Environment", k: int) -> "SceneDistribution | Iterable[Scene]":
    """The scenes the presupposition searches for one image: ``perception.presupposition_scenes`` when the
    perception is a :class:`SearchingPerception` (our :class:`~clevr_poc.perception.Perception`: the
    candidates' k best scenes, then those with its weak detections), else its ``scene_distribution`` (a
    :class:`RankedPerception`, e.g. a user's perception)."""
    search = getattr(perception, "presupposition_scenes", None)
    if callable(search):
        return search(image, camera, environment, k=k)
    return perception.scene_distribution(image, camera, environment, k=k)


__all__ = ["DEFAULT_PRESUPPOSITION_K", "MAX_PRESUPPOSITION_K", "RankedPerception", "SearchingPerception", "can_search",
           "check_presupposition_k", "presupposed_answer",
           "scenes_to_search", "searched_answer"]
