"""Look-up tables of one complete scene for question instantiation (:class:`SceneIndex`), built once per
scene instead of once per instantiation attempt (issue 27: :meth:`QuestionGenerator.generate
<clevr_poc.generation.question_generator.QuestionGenerator.generate>` instantiates templates on the
same scene several times per call).

Every table is a plain restatement of the scene's own fields (same values, same order), so code that
reads them decides exactly as code that reads the scene.
"""

from __future__ import annotations

from clevr_poc import domain
from clevr_poc.scene import Scene

#: One bit per description attribute (:meth:`SceneIndex.differences`).
ATTRIBUTE_BIT: dict[str, int] = {a: 1 << k for k, a in enumerate(domain.ATTRIBUTES)}


class SceneIndex:
    """Tables of ``scene`` (N objects), each made when first asked for:

    Attributes:
        scene: the scene they describe.
        everything: ``frozenset(range(N))``.
        values: attribute -> the N objects' values (``values["color"][p]`` is ``scene.objects[p].color``).
    """

    __slots__ = ("scene", "everything", "values", "_holders", "_related", "_differences", "_groups", "_others",
                 "_positions", "_same", "sufficient_masks")

    def __init__(self, scene: Scene) -> None:
        objects = scene.objects
        self.scene = scene
        self.everything = frozenset(range(len(objects)))
        self.values = {a: [getattr(o, a) for o in objects] for a in domain.ATTRIBUTES}
        self._holders: dict[int, dict[str, list[int]]] = {}
        self._related: dict[tuple[str, int], frozenset[int]] = {}
        self._differences: dict[int, list[int]] = {}
        self._groups: list[tuple[int, list[str], dict[str, list[int]]]] | None = None
        self._others: dict[tuple[int, frozenset[int]], tuple[int, ...]] = {}
        self._positions: dict[str, dict[str, list[int]]] = {}
        self._same: dict[tuple[str, int], frozenset[int]] = {}
        #: (obj, candidates) -> :meth:`sufficient` of them, for those asked already
        self.sufficient_masks: dict[tuple[int, frozenset[int]], int] = {}

    def holders(self, obj: int) -> dict[str, list[int]]:
        """rel -> every p, ascending, with ``obj in scene.relationships[rel][p]`` ("obj is rel of p"), for
        each relation of :data:`clevr_poc.domain.RELATIONS`."""
        table = self._holders.get(obj)
        if table is None:
            relationships = self.scene.relationships
            table = self._holders[obj] = {
                r: [p for p, row in enumerate(relationships[r]) if obj in row] for r in domain.RELATIONS}
        return table

    def related(self, rel: str, p: int) -> frozenset[int]:
        """``frozenset(scene.relationships[rel][p])``."""
        key = (rel, p)
        value = self._related.get(key)
        if value is None:
            value = self._related[key] = frozenset(self.scene.relationships[rel][p])
        return value

    def differences(self, obj: int) -> list[int]:
        """Per object p, the :data:`ATTRIBUTE_BIT` bits of the attributes whose value differs between p
        and ``obj`` (a description ``D`` of ``obj`` matches p when ``differences(obj)[p] & bits(D) == 0``)."""
        row = self._differences.get(obj)
        if row is None:
            # every bit set, then cleared for the objects that share obj's value (issue 27: a few
            # objects per attribute instead of all of them)
            groups = self._groups
            if groups is None:
                groups = self._groups = [(bit, self.values[attribute], self.positions(attribute))
                                         for attribute, bit in ATTRIBUTE_BIT.items()]
            row = [_ALL_BITS] * len(self.everything)
            for bit, column, positions in groups:
                for p in positions[column[obj]]:
                    row[p] &= ~bit
            self._differences[obj] = row
        return row


    def others(self, obj: int, candidates: frozenset[int]) -> tuple[int, ...]:
        """The distinct :meth:`differences` of ``obj`` to the members of ``candidates`` (which holds
        ``obj``) other than ``obj`` itself, one entry per pattern: a description singles ``obj`` out when
        it sets a bit of every one (kept per (obj, candidates): tries of one question meet the same
        sets; issue 27)."""
        key = (obj, candidates)
        patterns = self._others.get(key)
        if patterns is None:
            row = self.differences(obj)
            rows = list(map(row.__getitem__, candidates))
            rows.remove(0)  # obj's own entry (no attribute differs); another 0 is another candidate
            patterns = self._others[key] = tuple(set(rows))
        return patterns


    def positions(self, attribute: str) -> dict[str, list[int]]:
        """value -> the objects (ascending) whose ``attribute`` has that value."""
        table = self._positions.get(attribute)
        if table is None:
            table = self._positions[attribute] = _positions(self.values[attribute])
        return table

    def same(self, attribute: str, ref: int) -> frozenset[int]:
        """The objects other than ``ref`` with ``ref``'s value of ``attribute`` (a ``same_<attribute>``
        node's output)."""
        key = (attribute, ref)
        found = self._same.get(key)
        if found is None:
            found = self._same[key] = frozenset(
                p for p in self.positions(attribute)[self.values[attribute][ref]] if p != ref)
        return found

    def sufficient(self, obj: int, candidates: frozenset[int]) -> int:
        """Bit m set when the attributes of :data:`ATTRIBUTE_BIT` mask m describe ``obj`` (a member of
        ``candidates``) uniquely among ``candidates``: m sets a bit of every other candidate's
        :meth:`differences` (as :meth:`others`' patterns). One look-up per grown description instead of a
        pass over the patterns (issue 27); per candidate one AND of :data:`_HITS`."""
        key = (obj, candidates)
        found = self.sufficient_masks.get(key)
        if found is None:
            row = self.differences(obj)
            found = _HITS[0] if obj not in candidates else _EVERY_MASK
            for p in candidates:
                if p != obj:
                    found &= _HITS[row[p]]
            self.sufficient_masks[key] = found
        return found


_ALL_BITS = sum(ATTRIBUTE_BIT.values())
#: Per difference pattern d, bit m set for every attribute mask m that meets d (``m & d != 0``).
_HITS: tuple[int, ...] = tuple(sum(1 << m for m in range(_ALL_BITS + 1) if m & d) for d in range(_ALL_BITS + 1))
#: Every attribute mask.
_EVERY_MASK = (1 << (_ALL_BITS + 1)) - 1


def _positions(column: list[str]) -> dict[str, list[int]]:
    """value -> the positions holding it, ascending."""
    positions: dict[str, list[int]] = {}
    for p, value in enumerate(column):
        positions.setdefault(value, []).append(p)
    return positions


_LAST: tuple[Scene, SceneIndex] | None = None


def scene_index(scene: Scene) -> SceneIndex:
    """The :class:`SceneIndex` of ``scene``; the last one made is kept and reused while the same scene
    object (a frozen value) comes again."""
    global _LAST
    last = _LAST
    if last is not None and last[0] is scene:
        return last[1]
    index = SceneIndex(scene)
    _LAST = (scene, index)
    return index
