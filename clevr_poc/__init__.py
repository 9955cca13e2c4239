"""clevr_poc: reasoning-intensive visual question answering under partial observability (CLEVR-POC).

The public face of the library::

    from clevr_poc import Reasoner, Environment, Scene, Question, Answer
    from clevr_poc import Pipeline        # image + question -> answer (loaded lazily: no torch at import)
"""

from typing import Any

from clevr_poc.answer import Answer, Elimination, Explanation, Witness
from clevr_poc.environments import TEMPLATES, Constraint, Environment
from clevr_poc.errors import ClevrPocError, FormatError, SolverTimeoutError, UnsafeProgramError, UnsatisfiableError
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner, sanitize_query
from clevr_poc.scene import Scene, SceneObject

__version__ = "0.1.0"

__all__ = [
    "Answer", "ClevrPocError", "Constraint", "Elimination", "Environment", "Explanation", "FormatError",
    "Question", "Reasoner", "Scene", "SceneObject", "SolverTimeoutError", "TEMPLATES", "UnsafeProgramError",
    "UnsatisfiableError", "Witness", "sanitize_query", "Pipeline", "load_dataset",
]

#: Names imported on first use (PEP 562), so ``import clevr_poc`` never imports torch or bpy.
_LAZY = {"Pipeline": "clevr_poc.pipeline", "load_dataset": "clevr_poc.dataset_formats"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'clevr_poc' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
