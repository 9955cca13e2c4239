"""``Pipeline.answer_batch(..., workers=N)``: the questions answered by N copies of the pipeline in worker
processes (or Ray actors), with the answers and errors of the single-process call (issue 27).

The calling process checks the inputs and parses the questions (one batch); each worker rebuilds the
pipeline once from its parts (the perception model's weights, the parser, the reasoner's settings: a
fresh :class:`~clevr_poc.reasoning.Reasoner` with the same settings, whose solver cache is per process)
and perceives, decodes and reasons about its share of the questions; questions about one environment go
to one worker (:class:`~clevr_poc.evaluation.model_pool.ModelPool`). An item that fails in a worker is
answered again in the calling process, which raises its exact error (naming the item).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from clevr_poc.errors import ClevrPocError
from clevr_poc.evaluation.model_pool import ModelPool, ModelRecipe

#: Settings of a :class:`~clevr_poc.reasoning.Reasoner` a worker copies (its constructor's arguments).
REASONER_SETTINGS: tuple[str, ...] = ("time_limit", "rename_head", "mode", "cache_size", "isolate",
                                      "max_object_variables")


#: Questions per worker task: a worker that runs out of questions takes the others' waiting tasks
#: (:class:`~clevr_poc.evaluation.model_pool.ModelPool`); about 0.2 s each from pixels.
TASK_SIZE = 4


def pipeline_recipe(pipeline: Any) -> ModelRecipe:
    """How a worker rebuilds ``pipeline`` (its perception and parser must pickle: torch models do)."""
    state = {"class": type(pipeline), "perception": pipeline.perception, "parser": pipeline.parser,
             "reasoner_class": type(pipeline.reasoner),
             "reasoner": {k: getattr(pipeline.reasoner, k) for k in REASONER_SETTINGS},
             "constraint_decoding": pipeline.constraint_decoding, "name": pipeline.name,
             "parser_name": pipeline.parser_name, "camera_source": pipeline.camera_source}
    return ModelRecipe(rebuild_pipeline, (state,))


def rebuild_pipeline(state: dict[str, Any]) -> Any:
    """The pipeline of :func:`pipeline_recipe`'s state (its classes travel by reference)."""
    reasoner = state["reasoner_class"](**state["reasoner"])
    return state["class"](state["perception"], state["parser"], reasoner=reasoner,
                          constraint_decoding=state["constraint_decoding"], name=state["name"],
                          parser_name=state["parser_name"], camera_source=state["camera_source"])


def _answer_share(pipeline: Any, items: Sequence[Any], *, explain: bool) -> list[Any]:
    """Worker: the answer of each item, or None where it failed (the caller repeats it to raise)."""
    out: list[Any] = []
    for item in items:
        try:
            out.append(pipeline.answer_batch([item], explain=explain)[0])
        except ClevrPocError:
            out.append(None)
    return out


def answer_in_workers(pipeline: Any, inputs: Sequence[Any], queries: dict[int, str], *, explain: bool,
                      workers: int, executor: str = "local", ray_address: str | None = None) -> list[Any]:
    """The answers of ``inputs`` (:class:`~clevr_poc.pipeline_inputs.PipelineInput` objects) with their
    ``queries`` (item index -> ASP query), computed by ``workers`` copies of ``pipeline``.

    Raises:
        ExecutorError: bad executor settings.
        ClevrPocError: as :meth:`Pipeline.answer_batch` (the first failing item's own error).
    """
    items = [replace(item, query=queries[i]) for i, item in enumerate(inputs)]
    with ModelPool(pipeline_recipe(pipeline), workers=workers, executor=executor, ray_address=ray_address,
                   name=pipeline.name, task_size=TASK_SIZE) as pool:
        answers = pool.map_routed(_answer_share, items, explain=explain)
    for i, answer in enumerate(answers):
        if answer is None:
            try:
                pipeline.answer_batch([items[i]], explain=explain)
            except ClevrPocError as exc:
                exc.__notes__[-1] = f"in item {i}"  # answer_batch named it item 0 of its one-item batch
                raise
            raise RuntimeError(f"item {i} failed in a worker process but not here")  # pragma: no cover
    return answers


__all__ = ["REASONER_SETTINGS", "TASK_SIZE", "answer_in_workers", "pipeline_recipe", "rebuild_pipeline"]
