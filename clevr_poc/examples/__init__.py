"""Worked examples shipped with the package, as files in the official formats.

Each example is a folder ``clevr_poc/examples/<name>/`` holding

- ``environment.lp``: the environment program (background theory, ``object(0..N-1)``, constraints);
- ``scene.json``: the partial (incomplete) scene, official scene JSON;
- ``question.json``: the question, official question JSON (``question``, ``asp_query``, ``answer``, ...).

Examples (see :mod:`clevr_poc.examples._build` for how each was made and from which part of the paper):

- ``appendix_a``: the paper's Appendix A example ("There is another red rubber object that is the same
  shape as the big purple object; what size is it?", answer ``{small, medium}``);
- ``appendix_c1``: the first example of the GPT-4 prompt of Appendix C.1 ("The other cylinder that is
  the same material as the medium red thing is what color?", answer ``{gray}``).

Usage::

    from clevr_poc.examples import load_example
    environment, scene, question = load_example("appendix_a")
    Reasoner().answer(environment, scene, question).values   # frozenset({'small', 'medium'})

or ``python -m clevr_poc answer --example appendix_a --explain``.
"""

from __future__ import annotations

from pathlib import Path

from clevr_poc.environments import Environment
from clevr_poc.errors import FormatError
from clevr_poc.question import Question
from clevr_poc.scene import Scene

#: Names of the shipped examples.
EXAMPLES: tuple[str, ...] = ("appendix_a", "appendix_c1")

#: File names inside an example folder.
ENVIRONMENT_FILE = "environment.lp"
SCENE_FILE = "scene.json"
QUESTION_FILE = "question.json"


def example_dir(name: str) -> Path:
    """The folder of example ``name``.

    Raises:
        FormatError: ``name`` is not one of :data:`EXAMPLES`.
    """
    if name not in EXAMPLES:
        raise FormatError(f"unknown example; expected one of {list(EXAMPLES)}", field="example", value=name)
    return Path(__file__).resolve().parent / name


def load_example(name: str) -> tuple[Environment, Scene, Question]:
    """Read example ``name`` from its files: ``(environment, partial scene, question)``.

    The question carries its gold answer (``question.answer``).

    Raises:
        FormatError: unknown name, or a missing/damaged file (a broken installation).
    """
    folder = example_dir(name)
    return (
        Environment.from_lp(folder / ENVIRONMENT_FILE),
        Scene.from_file(folder / SCENE_FILE),
        Question.from_file(folder / QUESTION_FILE),
    )


__all__ = ["EXAMPLES", "example_dir", "load_example"]
