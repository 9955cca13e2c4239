"""Issue 27: :class:`EnvironmentSolver` reads its literals by looking up the atoms of a per-size table
(``_atom_table``) instead of walking every atom of the grounded program; its tables must be those of
the walk (every external, ``hasProperty/3``, ``at/2`` and relation atom of the program, nothing more)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clevr_poc import domain
from clevr_poc.dataset_reader import load_dataset
from clevr_poc.reasoning.compiled import EnvironmentSolver

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset"


def _atom_key(text: str) -> tuple:
    """``("q_property", 0, "color", "red")`` of the atom text ``q_property(0,color,red)`` (numbers as ints,
    constants as names; the atoms read here have no other arguments)."""
    name, _, rest = text.partition("(")
    return (name, *(int(a) if a.isdigit() else a for a in rest[:-1].split(",")))


def _walked(solver: EnvironmentSolver) -> dict:
    """The literals of every atom of the solver's program with the signatures it reads, by walking them
    (the construction before issue 27's change): externals as their false literals, the rest as is."""
    atoms = solver.control.symbolic_atoms
    out: dict[tuple, int] = {}
    for name, arity in EnvironmentSolver.EXTERNALS:
        for atom in atoms.by_signature(name, arity):
            assert atom.is_external
            out[_atom_key(str(atom.symbol))] = -atom.literal
    for name, arity in [("hasProperty", 3), ("at", 2)] + [(rel, 2) for rel in domain.RELATIONS]:
        for atom in atoms.by_signature(name, arity):
            key = _atom_key(str(atom.symbol))
            if name not in domain.RELATIONS or key[1] < key[2]:
                out[key] = atom.literal
    return out


def _tables(solver: EnvironmentSolver) -> dict:
    out = {key: solver.base[position] for key, position in solver.index.items()}
    for i, attributes in enumerate(solver.properties):
        for attribute, values in attributes.items():
            out.update({("hasProperty", i, attribute, value): literal for value, literal in values.items()})
    for i, regions in enumerate(solver.regions):
        out.update({("at", i, region): literal for region, literal in regions.items()})
    for rel, rows in solver.relations.items():
        for i, row in enumerate(rows):
            for j, literal in enumerate(row):
                if i < j:
                    out[(rel, i, j)] = literal
                elif i > j:  # the external scene_relation(rel, i, j), by its position in base
                    assert solver.base[-1 - literal] == out[("scene_relation", rel, i, j)]
                else:
                    assert literal == 0
    return out


@pytest.mark.parametrize("slots", [1, 2, 4, 5])
def test_tables_equal_a_walk_of_the_program(slots):
    seen = set()
    for example in load_dataset(FIXTURE, "test"):
        environment = example.environment
        key = (environment.num_objects, environment.constraints_asp())
        if key in seen:
            continue
        seen.add(key)
        solver = EnvironmentSolver(environment.num_objects, key[1], slots=slots)
        walked = _walked(solver)
        assert _tables(solver) == walked
        n = environment.num_objects
        # scene_relation: 4 relations x pairs; per slot: slot, q_object x n, q_property x 17 values, q_at x 4
        # regions, q_target x 4 attributes; per ordered pair of slots: q_relation x 4, q_same x 4; q_distinct
        externals = 4 * n * (n - 1) // 2 + slots * (1 + n + 17 + 4 + 4) + slots * (slots - 1) * 8 + slots * (slots - 1) // 2
        assert len(solver.index) == externals
    assert seen


def test_tables_without_constraints_for_every_size():
    for n in (1, 2, 5, 9):
        solver = EnvironmentSolver(n, "", slots=3)
        assert _tables(solver) == _walked(solver)
        assert len(solver.properties) == n and all(len(solver.regions[i]) == 4 for i in range(n))
        assert sum(len(v) for v in solver.properties[0].values()) == 17  # 8 colours, 4 shapes, 3 sizes, 2 materials
