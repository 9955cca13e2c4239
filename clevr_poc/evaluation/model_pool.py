"""A model on several worker processes (local or Ray), built once per worker, with the evaluator's model
protocol (``predict_batch``), so ``evaluate`` of any model uses the machine::

    recipe = ModelRecipe(build_model, (args,))          # a module-level factory and picklable arguments
    with ModelPool(recipe, workers=2) as model:           # executor="ray" (optionally ray_address=...)
        report = evaluate(model, examples)

Each worker builds the model from the recipe once (weights loaded once per worker, kept for every later
batch). Examples are routed by environment: the first time an environment is seen it goes to the worker
with the fewest examples so far and stays there, so each environment's grounded solver (the reasoner's
compiled program, about 20 ms per environment) is built in one worker only. With ``task_size`` a
worker's share goes in small tasks and a worker that runs out takes the other's waiting ones (that
environment is then grounded in both), so that no worker idles while the other finishes a batch.
The predictions come back in the order of the examples and are those of the single-process model:
every model here is deterministic per example (``tests/test_model_pool.py`` compares them).

Local workers are ``spawn``-ed processes (no forked clingo or torch threads); with Ray each worker is an
actor (``pip install '.[scale]'``), on this machine or on a cluster (``ray_address``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from clevr_poc.evaluation.model_protocol import Model
from clevr_poc.evaluation.report import Prediction
from clevr_poc.executors import ExecutorConfig, ExecutorError, ray_session

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example


@dataclass(frozen=True)
class ModelRecipe:
    """How a worker builds the model: ``factory(*args, **kwargs)``; ``factory`` is a module-level
    function (pickled by reference) and the arguments are picklable (an ``argparse.Namespace``, paths)."""

    factory: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        return self.factory(*self.args, **dict(self.kwargs))


_MODEL: list[Any] = []  # the worker process's model (one per process)


def _start_worker(recipe: ModelRecipe) -> None:
    _MODEL[:] = [recipe.build()]


def predict_with(model: Model, examples: Sequence["Example"]) -> list[Prediction]:
    """``model.predict_batch(examples)`` (the evaluator's model protocol,
    :class:`~clevr_poc.evaluation.model_protocol.Model`)."""
    return list(model.predict_batch(list(examples)))


def _run(func: Callable[..., list[Any]], items: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    return func(_MODEL[0], items, **kwargs)


def _name() -> str:
    from clevr_poc.evaluation.evaluator import model_name

    return model_name(_MODEL[0])


class _ModelActor:
    """Ray actor body: one model, built once."""

    def __init__(self, recipe: ModelRecipe) -> None:
        self.model = recipe.build()

    def run(self, func: Callable[..., list[Any]], items: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        return func(self.model, items, **kwargs)

    def name(self) -> str:
        from clevr_poc.evaluation.evaluator import model_name

        return model_name(self.model)


def _tasks(share: list[int], items: Sequence[Any], size: int | None) -> list[list[int]]:
    """``share`` (positions of ``items``) as tasks of at most ``size`` positions: the positions grouped by
    environment (in order of first appearance, each group in order), each group cut into pieces of
    ``size``, pieces packed together while they fit (None: the whole share, one task)."""
    if not size:
        return [share] if share else []
    groups: dict[Any, list[int]] = {}
    for position in share:
        groups.setdefault(environment_key(items[position], position), []).append(position)
    tasks: list[list[int]] = []
    for group in groups.values():
        for start in range(0, len(group), size):
            piece = group[start:start + size]
            if tasks and len(tasks[-1]) + len(piece) <= size:
                tasks[-1].extend(piece)
            else:
                tasks.append(piece)
    return tasks


def environment_key(example: "Example", position: int) -> tuple[str, int | None]:
    """What routes an example: its environment's id (examples of one environment share a worker), else
    its position."""
    environment = getattr(example, "environment", None)
    env_id = getattr(environment, "id", None)
    if env_id is None:
        env_id = getattr(getattr(example, "question", None), "environment_id", None)
    return ("environment", env_id) if env_id is not None else ("position", position)


class ModelPool:
    """``workers`` copies of a model in worker processes, used as one model (``predict_batch``).

    Args:
        recipe: how each worker builds the model.
        workers: worker processes (local) or Ray actors; >= 1.
        executor: ``"local"`` or ``"ray"``; ray_address: a Ray cluster (None: a local Ray instance).
        name: the model's name when the caller knows it (else asked from the first worker).
        task_size: items per task (None: one task per worker and call, for models that batch widely,
            e.g. CLIP); with a size, workers that run out of work take waiting tasks of the others
            (:meth:`map_routed`): for models that answer one item at a time (NS-VQA from pixels).

    Use it as a context manager (or call :meth:`close`): the workers start on the first batch and
    stop on exit. Raises :class:`~clevr_poc.executors.ExecutorError` for bad settings; an exception
    raised by the model in a worker is re-raised in the caller (its own type).
    """

    def __init__(self, recipe: ModelRecipe, *, workers: int, executor: str = "local",
                 ray_address: str | None = None, name: str | None = None, task_size: int | None = None) -> None:
        self.config = ExecutorConfig(workers, executor, ray_address)
        if task_size is not None and (isinstance(task_size, bool) or not isinstance(task_size, int) or task_size < 1):
            raise ExecutorError(f"task_size must be a positive integer or None, not {task_size!r}")
        self.task_size = task_size
        self.recipe = recipe
        self._workers: list[Any] = []
        self._stack = contextlib.ExitStack()
        self._route: dict[Any, int] = {}
        self._load = [0] * workers
        self._name = name

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "ModelPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (a later batch starts them again)."""
        self._workers = []
        self._stack.close()

    def start(self) -> "ModelPool":
        """Start the workers and wait until each has built its model (so that timings leave model
        loading aside); returns the pool."""
        self._start()
        if self.config.executor == "ray":
            names = [self._result(worker.name.remote()) for worker in self._workers]
        else:
            names = [worker.submit(_name).result() for worker in self._workers]
        if self._name is None:
            self._name = names[0]
        return self

    def _start(self) -> None:
        if self._workers:
            return
        if self.config.executor == "ray":
            ray = self._stack.enter_context(ray_session(self.config.workers, self.config.ray_address))
            actor = ray.remote(_ModelActor)
            self._workers = [actor.remote(self.recipe) for _ in range(self.config.workers)]
            return
        context = multiprocessing.get_context("spawn")
        for _ in range(self.config.workers):
            pool = ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_start_worker,
                                       initargs=(self.recipe,))
            self._stack.callback(pool.shutdown, cancel_futures=True)
            self._workers.append(pool)

    def _submit(self, worker: int, func: Callable[..., list[Any]], items: list[Any], kwargs: Mapping[str, Any]
                ) -> Any:
        if self.config.executor == "ray":
            return self._workers[worker].run.remote(func, items, kwargs)
        return self._workers[worker].submit(_run, func, items, kwargs)

    def _result(self, handle: Any) -> Any:
        if isinstance(handle, Future):
            return handle.result()
        import ray

        try:
            return ray.get(handle)
        except ray.exceptions.RayTaskError as exc:  # re-raise the worker's own exception
            cause = getattr(exc, "cause", None)
            raise (cause if isinstance(cause, BaseException) else exc.as_instanceof_cause()) from None

    # ------------------------------------------------------------------ the model protocol
    @property
    def name(self) -> str:
        """The model's own name (asked from the first worker)."""
        if self._name is None:
            self._start()
            if self.config.executor == "ray":
                self._name = self._result(self._workers[0].name.remote())
            else:
                self._name = self._workers[0].submit(_name).result()
        return self._name

    def worker_of(self, example: "Example", position: int = 0) -> int:
        """The worker an example goes to (environments stick to the first worker they were sent to)."""
        key = environment_key(example, position)
        worker = self._route.get(key)
        if worker is None:
            worker = self._route[key] = min(range(len(self._load)), key=self._load.__getitem__)
        return worker

    def map_routed(self, func: Callable[..., list[Any]], items: Sequence[Any], **kwargs: Any) -> list[Any]:
        """``func(model, share, **kwargs)`` (a module-level function returning one result per item) on each
        worker's share of ``items`` (routed by environment); the results in the order of ``items``.

        With ``task_size`` each share goes in tasks of at most that many items (an environment's items
        together where they fit), at most two in flight per worker; a worker whose own tasks are done takes
        the last waiting task of the worker with the most left (its environment is then grounded there
        too), so that both stay busy to the end of the call."""
        items = list(items)
        self._start()
        shares: list[list[int]] = [[] for _ in self._workers]
        for position, item in enumerate(items):
            worker = self.worker_of(item, position)
            self._load[worker] += 1
            shares[worker].append(position)
        queues = [deque(_tasks(share, items, self.task_size)) for share in shares]
        out: list[Any] = [None] * len(items)
        running: dict[Any, list[int]] = {}
        in_flight = [0] * len(self._workers)
        owner: dict[Any, int] = {}
        depth = 2 if self.task_size else 1   # tasks in flight per worker
        while running or any(queues):
            for worker in range(len(self._workers)):
                while in_flight[worker] < depth:
                    source = worker
                    if not queues[worker] and self.task_size:   # steal the others' last waiting task
                        source = max(range(len(queues)), key=lambda w: len(queues[w]))
                    if not queues[source]:
                        break
                    positions = queues[source].popleft() if source == worker else queues[source].pop()
                    handle = self._submit(worker, func, [items[p] for p in positions], kwargs)
                    running[handle], owner[handle] = positions, worker
                    in_flight[worker] += 1
            for handle in self._finished(list(running)):
                positions, worker = running.pop(handle), owner.pop(handle)
                in_flight[worker] -= 1
                results = self._result(handle)
                if len(results) != len(positions):
                    raise RuntimeError(f"{getattr(func, '__name__', func)} returned {len(results)} results for "
                                       f"{len(positions)} items")
                for position, result in zip(positions, results):
                    out[position] = result
        return out

    def _finished(self, handles: list[Any]) -> list[Any]:
        """The handles among ``handles`` that are done (waiting for at least one)."""
        if self.config.executor == "ray":
            import ray

            done, _ = ray.wait(handles, num_returns=1)
            return done
        done, _ = wait(handles, return_when=FIRST_COMPLETED)
        return list(done)

    def predict_batch(self, examples: Sequence[Any]) -> list[Any]:
        """The model's predictions of ``examples``, in order (tasks as :meth:`map_routed` sends them)."""
        return self.map_routed(predict_with, examples)


__all__ = ["ModelPool", "ModelRecipe", "environment_key", "predict_with"]
