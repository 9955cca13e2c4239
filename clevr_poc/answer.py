"""The Answer value object: an answer *set* plus how it was obtained."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Elimination:
    """Why a value is not in the answer.

    Attributes:
        value: the eliminated attribute value.
        constraints: indices (into ``Environment.constraints``) of a minimal set of environment
            constraints that together rule the value out; empty when the scene, the question and the
            background theory alone rule it out.
        texts: natural-language renderings of those constraints (same order).
        background: names of background rules involved (e.g. ``"at most 3 objects per region"``), if any.
    """

    value: str
    constraints: tuple[int, ...]
    texts: tuple[str, ...]
    background: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line per reason, e.g.::

            large: ruled out by these 2 rules together (without any one of them it would be possible):
              - constraint 0: No object in region 0 has size large.
              - background: at most 3 objects per region
        """
        return _elimination_text(self.value, self)


def _elimination_text(label: str, e: Elimination) -> str:
    reasons = [f"constraint {k}: {text}" for k, text in zip(e.constraints, e.texts)]
    reasons += [f"background: {name}" for name in e.background]
    if not reasons:
        return (f"{label}: ruled out by the scene and the question alone (every object has one "
                f"value per attribute and one region; no constraint is needed)")
    if len(reasons) == 1:
        head = f"{label}: ruled out by this rule alone:"
    else:
        head = (f"{label}: ruled out by these {len(reasons)} rules together (without any one of them "
                f"it would be possible):")
    return "\n".join([head] + [f"  - {r}" for r in reasons])


@dataclass(frozen=True)
class Witness:
    """Why a value is kept: one consistent completion of the scene in which the query yields it.

    Attributes:
        value: the kept attribute value.
        hidden_object: attributes and region of the hidden object in that completion (keys
            color/shape/size/material/region, and ``id``, the hidden object's id = number of visible
            objects); empty when nothing is hidden.
        matched_object: id of the object bound to the query variable X (the hidden object's id is
            ``len(partial scene)``), or None if unknown.
    """

    value: str
    hidden_object: dict[str, Any]
    matched_object: int | None = None

    def describe(self) -> str:
        """E.g. ``small: possible, e.g. when the hidden object (object 4) is a small red rubber sphere in
        region 0; the question is then about the hidden object``."""
        o = self.hidden_object
        hidden_id = o.get("id")
        parts = []
        if o:
            name = " ".join(str(o[k]) for k in ("size", "color", "material", "shape") if o.get(k) is not None)
            where = f" in region {o['region']}" if o.get("region") is not None else ""
            label = f"the hidden object (object {hidden_id})" if hidden_id is not None else "the hidden object"
            parts.append(f"when {label} is a {name}{where}")
        if self.matched_object is not None:
            if hidden_id is not None and self.matched_object == hidden_id:
                parts.append("the question is then about the hidden object")
            else:
                parts.append(f"the question is then about the visible object {self.matched_object}")
        return f"{self.value}: possible, e.g. " + "; ".join(parts) if parts else f"{self.value}: possible"


@dataclass(frozen=True)
class Explanation:
    """Per-value reasons: every eliminated value with its constraints, every kept value with a witness."""

    attribute: str | None
    kept: tuple[Witness, ...]
    eliminated: tuple[Elimination, ...]

    def describe(self) -> str:
        """Multi-line human-readable explanation (printed by ``clevr-poc answer --explain``)."""
        attribute = f"{self.attribute} values" if self.attribute else "values"
        answer = ", ".join(w.value for w in self.kept) or "none"
        lines = [f"Possible {attribute}: {answer}."]
        lines += ["  " + w.describe() for w in self.kept]
        if self.eliminated:
            lines.append(f"Ruled-out {attribute}: {', '.join(e.value for e in self.eliminated)}.")
            groups: dict[tuple, list[Elimination]] = {}  # values ruled out by the same rules share a paragraph
            for e in self.eliminated:
                groups.setdefault((e.constraints, e.background), []).append(e)
            for members in groups.values():
                label = ", ".join(e.value for e in members)
                lines += ["  " + line for line in _elimination_text(label, members[0]).splitlines()]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "attribute": self.attribute,
            "kept": [{"value": w.value, "hidden_object": w.hidden_object, "matched_object": w.matched_object}
                     for w in self.kept],
            "eliminated": [{"value": e.value, "constraints": list(e.constraints), "texts": list(e.texts),
                            "background": list(e.background)} for e in self.eliminated],
        }


@dataclass(frozen=True)
class Answer:
    """The answer to a CLEVR-POC question: the set of every value consistent with the inputs.

    Attributes:
        values: the answer set (attribute values, e.g. ``frozenset({"small", "medium"})``). Empty when
            the program is unsatisfiable or nothing matches.
        attribute: the queried attribute, when known.
        satisfiable: False when environment + scene + query have no answer set.
        reason: human-readable reason for an empty answer (None otherwise).
        explanation: filled by :meth:`Reasoner.explain`.
        query: the ASP query that was run.
        scene_facts: the ASP scene facts that were used (perceived or given). The Reasoner hands over
            the scene (:func:`deferred_scene_facts`) and the text is printed when first read (issue 27:
            question generation never reads it); the value is the same.
    """

    values: frozenset[str]
    attribute: str | None = None
    satisfiable: bool = True
    reason: str | None = None
    explanation: Explanation | None = None
    query: str | None = None
    scene_facts: str | None = field(default=None, repr=False)

    def sorted_values(self) -> list[str]:
        return sorted(self.values)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"answer": self.sorted_values(), "attribute": self.attribute,
                                "satisfiable": self.satisfiable}
        if self.reason is not None:
            data["reason"] = self.reason
        if self.explanation is not None:
            data["explanation"] = self.explanation.to_json()
        if self.query is not None:
            data["query"] = self.query
        return data


class _DeferredSceneFacts:
    """The text of ``scene.to_asp_facts()``, printed when first needed (a pickled or copied one is the
    text itself)."""

    __slots__ = ("scene",)

    def __init__(self, scene: Any) -> None:
        self.scene = scene

    def text(self) -> str:
        return self.scene.to_asp_facts()

    def __reduce__(self):
        return str, (self.text(),)


def deferred_scene_facts(scene: Any) -> Any:
    """What to pass as :attr:`Answer.scene_facts` to have ``scene.to_asp_facts()`` (``scene``: a
    :class:`~clevr_poc.scene.Scene`, not changed afterwards) printed only when the field is read."""
    return _DeferredSceneFacts(scene)


class _SceneFactsField:
    """:attr:`Answer.scene_facts` as the dataclass stores it (in the instance's ``__dict__``), with a
    :func:`deferred_scene_facts` value replaced by its text on the first read."""

    def __get__(self, obj: Any, owner: Any = None) -> str | None:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__.get("scene_facts")
        if type(value) is _DeferredSceneFacts:
            value = obj.__dict__["scene_facts"] = value.text()
        return value

    def __set__(self, obj: Any, value: Any) -> None:  # the dataclass __init__ (object.__setattr__)
        obj.__dict__["scene_facts"] = value


# after the dataclass is made (its __init__, __eq__, __hash__ and dataclasses.replace read and write the
# field by attribute, hence through this descriptor; the default stays None)
Answer.scene_facts = _SceneFactsField()  # type: ignore[assignment]
