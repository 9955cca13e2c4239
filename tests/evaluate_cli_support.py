"""Support for the ``evaluate`` command's end-to-end tests (tests/test_evaluation.py,
tests/test_evaluate_ns_vqa_cli.py): one example written in the official release's layout, one CLI call."""

from __future__ import annotations

from pathlib import Path

from clevr_poc.environments import Environment
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene


def write_official_example(root: Path, index: int, environment: Environment, partial: Scene, asp_query: str, *,
                           text: str, template_filename: str, question_family_index: int, environment_id: int,
                           reasoner: Reasoner, complete: Scene | None = None) -> Question:
    """Write example ``index`` of the ``testing`` split under ``root`` in the official layout and return its
    question: ``environment_constraints/<environment_id>.lp``, and ``output/{incomplete,complete}/
    {questions,scenes}/testing/CLEVR_<index:06d>.json`` (the complete scene only when ``complete`` is given).
    The gold answer is ``reasoner``'s for ``asp_query`` on ``partial``.
    """
    (root / "environment_constraints").mkdir(parents=True, exist_ok=True)
    environment.to_lp(root / "environment_constraints" / f"{environment_id}.lp")
    name = f"CLEVR_{index:06d}"
    question = Question(text=text, asp_query=asp_query, answer=reasoner.answer(environment, partial, asp_query).values,
                        image_filename=f"{name}.png", image_index=index, split="testing",
                        template_filename=template_filename, question_family_index=question_family_index,
                        question_index=index, environment_id=environment_id)
    out = root / "output"
    question.to_file(out / "incomplete" / "questions" / "testing" / f"{name}.json")
    for scene, part in ((partial, "incomplete"), (complete, "complete")):
        if scene is not None:
            Scene(scene.objects, scene.relationships, "testing", index, f"{name}.png").to_file(
                out / part / "scenes" / "testing" / f"{name}.json")
    return question


def run_cli(argv: list[str], capsys) -> tuple[int, list[str], list[str]]:
    """``python -m clevr_poc <argv>`` in this process: its exit status and its stdout and stderr lines
    (stripped), read through pytest's ``capsys``."""
    from clevr_poc.commands.main import main

    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out.strip().splitlines(), captured.err.strip().splitlines()
