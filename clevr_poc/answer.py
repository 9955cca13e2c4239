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
        background: names of background rules involved (e.g. ``"region capacity"``), if any.
    """

    value: str
    constraints: tuple[int, ...]
    texts: tuple[str, ...]
    background: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.constraints and not self.background:
            return f"{self.value}: no object matching the question can have it (scene and question alone)"
        reasons = list(self.texts) + [f"background rule: {b}" for b in self.background]
        return f"{self.value}: ruled out by " + "; ".join(reasons)


@dataclass(frozen=True)
class Witness:
    """Why a value is kept: one consistent completion of the scene in which the query yields it.

    Attributes:
        value: the kept attribute value.
        hidden_object: attributes and region of the hidden object in that completion
            (keys color/shape/size/material/region).
        matched_object: id of the object bound to the query variable X (the hidden object's id is
            ``len(partial scene)``), or None if unknown.
    """

    value: str
    hidden_object: dict[str, Any]
    matched_object: int | None = None

    def describe(self) -> str:
        o = self.hidden_object
        text = (f"{self.value}: consistent, e.g. the hidden object is a {o.get('size')} {o.get('color')} "
                f"{o.get('material')} {o.get('shape')} in region {o.get('region')}")
        if self.matched_object is not None:
            text += f" (the question's object is object {self.matched_object})"
        return text


@dataclass(frozen=True)
class Explanation:
    """Per-value reasons: every eliminated value with its constraints, every kept value with a witness."""

    attribute: str | None
    kept: tuple[Witness, ...]
    eliminated: tuple[Elimination, ...]

    def describe(self) -> str:
        """Multi-line human-readable explanation."""
        lines = [f"query attribute: {self.attribute}"]
        lines += ["kept " + w.describe() for w in self.kept]
        lines += ["eliminated " + e.describe() for e in self.eliminated]
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
        scene_facts: the ASP scene facts that were used (perceived or given).
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
