"""The looks the hidden object of a partial scene can take (:func:`hidden_candidates`), the question
generator's cheap pre-filter of questions whose answer would be the whole domain."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from clevr_poc.environments.environment import Environment
from clevr_poc.errors import SolverTimeoutError
from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import environment_program, object_symbols
from clevr_poc.solver.watchdog import solve_brave
from clevr_poc.scene import Scene, SceneObject

#: A possible look of the hidden object: (color, shape, size, material, region).
Candidate = tuple[str, str, str, str, int]
#: Position of each field in a :data:`Candidate`.
CANDIDATE_FIELD = {"color": 0, "shape": 1, "size": 2, "material": 3, "region": 4}


_SCENE_CHECKS: dict[str, tuple] = {}


def _candidates_by_scene_check(environment: Environment, partial: Scene) -> frozenset[Candidate] | None:
    """:func:`hidden_candidates` by the scene sampler's vectorised constraint check
    (:class:`~clevr_poc.generation.scene_check.SceneCheck`): the allowed object types (one-object
    constraints, computed once per environment by clingo) that can join the visible objects (distinct
    objects, region capacity, counting templates). About a hundred times faster than enumerating the
    candidates with clingo; ``tests/test_questions.py`` checks both agree. None when it does not apply
    (object count differs from N-1)."""
    return candidates_of_visible(environment, partial.objects)


def candidates_of_visible(environment: Environment, visible: Sequence[SceneObject]) -> frozenset[Candidate] | None:
    """:func:`_candidates_by_scene_check` of a partial scene whose objects are ``visible`` (issue 27: the
    question generator asks before it makes the partial scene, which a hopeless question never needs)."""
    if len(visible) != environment.num_objects - 1:
        return None
    key = environment.constraints_asp()
    entry = _SCENE_CHECKS.get(key)
    if entry is None:
        from clevr_poc.generation.scene_check import SceneCheck
        from clevr_poc.generation.scene_programs import allowed_types

        if len(_SCENE_CHECKS) >= 256:
            _SCENE_CHECKS.pop(next(iter(_SCENE_CHECKS)))
        entry = _SCENE_CHECKS[key] = (allowed_types(environment.constraints), SceneCheck(environment.constraints))
    allowed, check = entry
    if len(allowed) == 0:
        return frozenset()
    from clevr_poc.generation.object_types import TYPE_TUPLES, type_id  # imported on first use

    others = np.fromiter(map(type_id, visible), dtype=np.int64, count=len(visible))
    ok = check.object_replacements_row(others, allowed)  # one scene (issue 27: about 35% less time)
    ids = allowed[ok]
    candidates = frozenset(map(TYPE_TUPLES.__getitem__, ids.tolist()))
    # their candidate_bits, from the ids at hand (issue 27: about 2 us instead of 20-25 for 300 ids)
    present = np.zeros(len(TYPE_TUPLES), dtype=np.bool_)
    present[ids] = True
    _remember_bits(candidates, int.from_bytes(np.packbits(present, bitorder="little").tobytes(), "little"))
    return candidates


def _remember_bits(candidates: frozenset[Candidate], bits: int) -> None:
    """Keep ``bits`` as :func:`candidate_bits` of ``candidates`` (which they must be)."""
    global _LAST_BITS
    _LAST_BITS = (candidates, bits)


def candidate_bits(candidates: frozenset[Candidate]) -> int | None:
    """``candidates`` as a set of object type ids (:mod:`~clevr_poc.generation.object_types`): bit t is set
    when ``TYPE_TUPLES[t]`` is a candidate; None when a candidate is not an object type. The last set's
    bits are kept (issue 27: the question generator's
    :func:`~clevr_poc.generation.question_instance.possible_values` reads them several times per question)."""
    global _LAST_BITS
    last = _LAST_BITS
    if last is not None and last[0] is candidates:
        return last[1]
    from clevr_poc.generation.object_types import TYPE_OF_TUPLE

    try:
        ids = list(map(TYPE_OF_TUPLE.get, candidates))
    except TypeError:  # an unhashable candidate
        return None
    if None in ids:
        return None
    # distinct members of a set are distinct keys of TYPE_OF_TUPLE (the inverse of TYPE_TUPLES): distinct
    # ids, so their sum of bits is their union
    bits = sum(map((1).__lshift__, ids))
    _LAST_BITS = (candidates, bits)
    return bits


#: The last :func:`candidate_bits` argument (by identity) and its bits.
_LAST_BITS: tuple[frozenset, int] | None = None


def field_bits() -> tuple[dict[object, int], ...]:
    """Per :data:`Candidate` field (color, shape, size, material, region), value -> the set of object
    type ids with that value (bits as in :func:`candidate_bits`)."""
    global _FIELD_BITS
    if _FIELD_BITS is None:
        from clevr_poc.generation.object_types import TYPE_TUPLES

        tables: tuple[dict[object, int], ...] = ({}, {}, {}, {}, {})
        for t, values in enumerate(TYPE_TUPLES):
            for table, value in zip(tables, values):
                table[value] = table.get(value, 0) | (1 << t)
        _FIELD_BITS = tables
    return _FIELD_BITS


_FIELD_BITS: tuple[dict[object, int], ...] | None = None


def hidden_candidates(environment: Environment, partial: Scene, *, time_limit: float = 10.0,
                      reasoner=None, method: str = "auto") -> frozenset[Candidate]:
    """Every (color, shape, size, material, region) the hidden object takes in some complete scene of
    ``environment`` that extends the visible objects of ``partial`` (``asp/hidden_candidates.lp``).

    One clingo call (brave consequences of background + ``object(0..N-1)`` + constraints + the visible
    objects' attributes and regions). Relations are left out: a relation between the hidden object and a
    visible one restricts only the hidden object's region (region adjacency, Appendix A lines 11-20),
    and every pair of regions admits left-or-right and front-or-behind, so the other pairs never rule a
    candidate out. Used as a cheap pre-filter of questions whose answer would be the whole domain.

    ``method="auto"`` uses the vectorised scene check when it applies (N-1 visible objects);
    ``method="clingo"`` (and the fallback) grounds a program for this call. ``reasoner`` is accepted for
    compatibility and not used.

    Raises:
        SolverTimeoutError: clingo took longer than ``time_limit`` seconds.
    """
    if method not in ("auto", "clingo"):
        raise ValueError(f"method must be 'auto' or 'clingo', got {method!r}")
    fast = _candidates_by_scene_check(environment, partial) if method == "auto" else None
    if fast is not None:
        return fast
    program = (environment_program(environment.num_objects, environment.constraints_asp(),
                                   knowledge=("hidden_candidates.lp",))
               .with_facts(object_symbols(partial)).grounding("hidden", len(partial)))
    control = program.load(make_control(["--models=0", "--enum-mode=brave"]))
    _, symbols, timed_out = solve_brave(control, (), time_limit)
    if timed_out:
        raise SolverTimeoutError(f"clingo did not finish within {time_limit:g} s (hidden object candidates)")
    return frozenset(
        (a[0].name, a[1].name, a[2].name, a[3].name, a[4].number)
        for a in (sym.arguments for sym in symbols if sym.name == "candidate" and len(sym.arguments) == 5)
    )
