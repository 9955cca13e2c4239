"""Write a CLEVR-POC dataset to disk: environments, complete and partial scenes, labelled questions.

Paper §3 (Fig. 2): environment -> complete scene graph -> partial scene graph (one object hidden) ->
question about the hidden object, labelled by the reasoner. Layout (the official release's, plus a
manifest, statistics and a dataset card)::

    OUT/dataset.json                                   settings (the manifest; checked on resume)
    OUT/environments/<id>.lp                           official environment program
    OUT/complete/scenes/<split>/CLEVR_%06d.json        complete scene (N objects)
    OUT/incomplete/scenes/<split>/CLEVR_%06d.json      partial scene (N-1 objects)
    OUT/incomplete/questions/<split>/CLEVR_%06d.json   one question per image (official keys +
                                                       constraint_type_index = environment id)
    OUT/incomplete/images/<split>/CLEVR_<split>_%06d.png   (rendered later; the scenes' image_filename)
    OUT/stats.json, OUT/figures/*.png, OUT/README.md   written at the end

``image_index`` counts from 0 within each split, as in CLEVR. Scene files also carry
``constraint_type_index`` (as the official release's scenes do); complete scene files also carry
``generation`` (what the example cost: ``attempts``, ``placement_failures``, ``layouts_checked``,
``visibility_rejections``, ``visibility_occluded``, ``visibility_too_small``, ``visibility_resamples``),
from which ``stats.json``'s ``generation`` section is summed.

**Visibility** (on by default; ``visibility_check="off"`` / ``generate --no-visibility-check`` disables
it). Every layout is checked from the exact camera the renderer will use for the example's image: the
render seed is :func:`clevr_poc.rendering.dataset.image_seed` (dataset seed, split, image file name),
which ``render`` uses by default for a dataset folder (the complete and the partial image share it), at
the renderer's default image size (320 x 240). Every object the partial image shows must cover at least
``min_visible_pixels`` pixels (default: the renderer's threshold, 40) -- and, with scope ``"both"``
(default), the hidden object too in the complete image (``render --complete``). A failing layout is
re-placed up to ``visibility_relayouts`` times, then the scene graph is redrawn (the next attempt, as
after a :class:`~clevr_poc.generation.layout.PlacementError`). See
:class:`~clevr_poc.generation.layout.VisibilityCheck`. No Blender is needed.

**Plan.** ``environments x scenes_per_environment`` examples, exactly ``scenes_per_environment`` per
environment (paper §3.1: scenes uniformly distributed over the environments). Split sizes are the
largest-remainder quotas of the shares; the split labels are laid over the examples (environment-major)
by a low-discrepancy sequence, so every environment's scenes are split in the configured proportions
(+-1) and every split holds each environment about equally often. Within a split, examples are ordered
round-robin over environments. Query attributes (paper Appendix B: 40/40/10/10 %) get exact
largest-remainder quotas over the whole dataset, laid over the splits by the same kind of sequence (each
split within +-1 of its share) and shuffled within each split by a seeded shuffle.

**Determinism.** Every example draws all its randomness from ``random.Random`` seeded by SHA-256 of
(seed, environment id, example index within the environment, attempt), so the files are byte-identical
whatever the worker count or executor. Workers only compute; the calling process writes, in order.

**Rejection without skew.** When no valid question exists for a scene (``1 <= |answer| < |domain|``
fails for every instantiation, or the layout cannot place the objects), the example is retried with the
next attempt's seed and the *same* query attribute, so rejection cannot skew the attribute shares.
Only after ``max_attempts`` failed attempts does an example fall back to the other attributes with a
positive share (largest share first); ``stats.json`` counts such fallbacks.

**Resumable.** An example is done when its question file exists (written last, atomically, after both
scene files). Kill the process at any moment and run the same call again: finished examples are
skipped, no partial file is ever visible, and the temp files a hard kill left are removed first
(:func:`remove_stale_generation_temps`). A folder generated with other settings is refused
(:class:`DatasetConfigError`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from clevr_poc import domain, limits
from clevr_poc._io import atomic_write_json, atomic_write_text, read_json, remove_stale_temp_files
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.generation.layout import DEFAULT_VISIBILITY_RELAYOUTS, VisibilityCheck
from clevr_poc.rendering.render import DEFAULT_HEIGHT, DEFAULT_WIDTH, default_min_pixels

#: Manifest file name (settings of the dataset; its presence marks a dataset folder).
MANIFEST = "dataset.json"
#: Version of the on-disk layout and of the example plan; bump when either changes.
FORMAT_VERSION = 2
#: What each format version changed (for the message that refuses an older folder).
FORMAT_HISTORY: Mapping[int, str] = {
    1: "first version",
    2: "layouts checked for visibility from the render camera; 'generation' key in complete scenes",
}
#: Values of :attr:`DatasetConfig.visibility_check`.
VISIBILITY_CHECKS: tuple[str, ...] = ("both", "partial", "off")
#: Default split shares.
DEFAULT_SPLITS: Mapping[str, float] = {"train": 0.6, "val": 0.2, "test": 0.2}
#: Default query-attribute shares (paper Appendix B).
DEFAULT_QUERY_SHARES: Mapping[str, float] = {"color": 0.4, "shape": 0.4, "size": 0.1, "material": 0.1}
#: Attempts (scene + layout + question) per example and query attribute before falling back.
DEFAULT_MAX_ATTEMPTS = 100
#: Scene/question file name pattern (official).
FILE_PATTERN = "CLEVR_%06d.json"


class GenerationError(ClevrPocError):
    """An example could not be generated (no valid question for any attribute within the attempts)."""


class DatasetConfigError(ClevrPocError, ValueError):
    """Bad settings, or the output folder holds a dataset generated with other settings."""


# ====================================================================== settings
@dataclass(frozen=True)
class DatasetConfig:
    """The settings that determine a dataset's content (and nothing else: not workers/executor).

    Attributes:
        environments: E >= 1 environments (ids 0..E-1).
        scenes_per_environment: S >= 1 examples (scene + question) per environment.
        seed: the random seed (any integer).
        splits: (name, share) pairs; shares >= 0, normalised to sum 1.
        query_shares: (attribute, share) pairs; shares >= 0, normalised to sum 1.
        max_attempts: attempts per example and query attribute (see the module docstring).
        format_version: :data:`FORMAT_VERSION`.
        visibility_check: ``"both"`` (default: every object visible in the complete image, hence every
            visible object in the partial one), ``"partial"`` (the partial image only) or ``"off"``.
        min_visible_pixels: pixels an object must cover; None -> the renderer's default for
            ``image_size`` (40 at 320 x 240); stored resolved.
        visibility_relayouts: re-placements of a scene graph failing the check before it is redrawn.
        image_size: (width, height) of the images the check assumes (the renderer's default 320 x 240).
    """

    environments: int
    scenes_per_environment: int
    seed: int
    splits: tuple[tuple[str, float], ...] = tuple(DEFAULT_SPLITS.items())
    query_shares: tuple[tuple[str, float], ...] = tuple(DEFAULT_QUERY_SHARES.items())
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    format_version: int = FORMAT_VERSION
    visibility_check: str = "both"
    min_visible_pixels: int | None = None
    visibility_relayouts: int = DEFAULT_VISIBILITY_RELAYOUTS
    image_size: tuple[int, int] = (DEFAULT_WIDTH, DEFAULT_HEIGHT)

    def __post_init__(self) -> None:
        for name in ("environments", "scenes_per_environment", "max_attempts"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise DatasetConfigError(f"{name} must be a positive integer, got {value!r}")
        check_generation_caps(self.environments, self.scenes_per_environment)
        if self.visibility_check not in VISIBILITY_CHECKS:
            raise DatasetConfigError(f"visibility_check must be one of {list(VISIBILITY_CHECKS)}, "
                                     f"got {self.visibility_check!r}")
        size = tuple(self.image_size) if isinstance(self.image_size, (list, tuple)) else ()
        if len(size) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in size):
            raise DatasetConfigError(f"image_size must be (width, height) in pixels, got {self.image_size!r}")
        object.__setattr__(self, "image_size", size)
        minimum = default_min_pixels(*size) if self.min_visible_pixels is None else self.min_visible_pixels
        if isinstance(minimum, bool) or not isinstance(minimum, int) or not 1 <= minimum <= size[0] * size[1]:
            raise DatasetConfigError(f"min_visible_pixels must be an integer from 1 to {size[0] * size[1]:,} "
                                     f"(the pixels of a {size[0]} x {size[1]} image), got {minimum!r}")
        object.__setattr__(self, "min_visible_pixels", minimum)
        relayouts = self.visibility_relayouts
        if isinstance(relayouts, bool) or not isinstance(relayouts, int) or relayouts < 0:
            raise DatasetConfigError(f"visibility_relayouts must be an integer >= 0, got {relayouts!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise DatasetConfigError(f"seed must be an integer, got {self.seed!r}")
        object.__setattr__(self, "splits", _normalise_shares(self.splits, "splits", _check_split_name))
        object.__setattr__(self, "query_shares",
                           _normalise_shares(self.query_shares, "query_shares", _check_attribute))

    def same_as(self, other: "DatasetConfig") -> bool:
        """Equal settings (shares compared to 1e-9, so re-normalised shares still match)."""
        def close(a, b) -> bool:
            return [n for n, _ in a] == [n for n, _ in b] and all(abs(x - y) <= 1e-9 for (_, x), (_, y) in zip(a, b))

        return (self.environments, self.scenes_per_environment, self.seed, self.max_attempts, self.format_version,
                self.visibility_json()) == (
            other.environments, other.scenes_per_environment, other.seed, other.max_attempts, other.format_version,
            other.visibility_json()
        ) and close(self.splits, other.splits) and close(self.query_shares, other.query_shares)

    @property
    def visibility(self) -> VisibilityCheck | None:
        """The layout check of the examples (None when ``visibility_check == "off"``)."""
        if self.visibility_check == "off":
            return None
        width, height = self.image_size
        return VisibilityCheck(self.visibility_check, self.min_visible_pixels, width, height,
                               self.visibility_relayouts)

    def visibility_json(self) -> dict[str, Any]:
        """The ``visibility`` object of the manifest."""
        return {"check": self.visibility_check, "min_pixels": self.min_visible_pixels,
                "image_size": list(self.image_size), "max_relayouts": self.visibility_relayouts}

    @property
    def fallback_attributes(self) -> tuple[str, ...]:
        """Attributes with a positive share, largest share first (the fallback order)."""
        return tuple(a for a, share in sorted(self.query_shares, key=lambda p: -p[1]) if share > 0)

    @property
    def total(self) -> int:
        """Number of examples, E x S."""
        return self.environments * self.scenes_per_environment

    @property
    def split_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.splits)

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version, "environments": self.environments,
            "scenes_per_environment": self.scenes_per_environment, "seed": self.seed,
            "splits": dict(self.splits), "query_shares": dict(self.query_shares), "max_attempts": self.max_attempts,
            "visibility": self.visibility_json(),
        }

    @classmethod
    def from_json(cls, data: Any, *, source: object = None) -> "DatasetConfig":
        if not isinstance(data, Mapping):
            raise FormatError("the manifest must be a JSON object", source=source)
        try:
            visibility = data.get("visibility", {"check": "off"})  # format 1 had no check
            if not isinstance(visibility, Mapping):
                raise FormatError("visibility must be a JSON object", source=source, field="visibility",
                                  value=visibility)
            return cls(environments=data["environments"], scenes_per_environment=data["scenes_per_environment"],
                       seed=data["seed"], splits=tuple(dict(data["splits"]).items()),
                       query_shares=tuple(dict(data["query_shares"]).items()),
                       max_attempts=data.get("max_attempts", DEFAULT_MAX_ATTEMPTS),
                       format_version=data.get("format_version", 0),
                       visibility_check=visibility.get("check", "off"),
                       min_visible_pixels=visibility.get("min_pixels"),
                       visibility_relayouts=visibility.get("max_relayouts", DEFAULT_VISIBILITY_RELAYOUTS),
                       image_size=tuple(visibility.get("image_size", (DEFAULT_WIDTH, DEFAULT_HEIGHT))))
        except KeyError as exc:
            raise FormatError("missing key", source=source, field=exc.args[0]) from None
        except (TypeError, ValueError, DatasetConfigError) as exc:
            raise FormatError(f"bad settings: {exc}", source=source) from None


def check_generation_caps(environments: int, scenes_per_environment: int, *,
                          flags: tuple[str, str] = ("environments", "scenes_per_environment")) -> None:
    """Refuse more than the ``environments`` cap or more than the ``examples`` cap of E x S examples
    (:mod:`clevr_poc.limits`; planning costs about 0.3 KB of memory per example), before anything is
    planned or written. ``flags`` names the two values in the message (the CLI passes its options).

    Raises:
        DatasetConfigError: naming the value, the cap and the variable that raises it.
    """
    if environments > limits.cap("environments"):
        raise DatasetConfigError(f"{flags[0]}: {environments:,} is over {limits.describe('environments')}")
    if environments * scenes_per_environment > limits.cap("examples"):
        raise DatasetConfigError(
            f"{flags[0]} x {flags[1]}: {environments:,} x {scenes_per_environment:,} = "
            f"{environments * scenes_per_environment:,} examples is over {limits.describe('examples')}")


def _check_split_name(name: object) -> None:
    if not isinstance(name, str) or not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        raise DatasetConfigError(f"split names must be non-empty words of letters, digits, '_' or '-', got {name!r}")


def _check_attribute(name: object) -> None:
    if name not in domain.ATTRIBUTES:
        raise DatasetConfigError(f"unknown query attribute {name!r}; expected one of {list(domain.ATTRIBUTES)}")


def _normalise_shares(pairs: Iterable[tuple[str, float]] | Mapping[str, float], what: str,
                      check: Callable[[object], None]) -> tuple[tuple[str, float], ...]:
    items = list(pairs.items()) if isinstance(pairs, Mapping) else [tuple(p) for p in pairs]
    seen = set()
    for item in items:
        if len(item) != 2:
            raise DatasetConfigError(f"{what}: expected (name, share) pairs, got {item!r}")
        name, share = item
        check(name)
        if name in seen:
            raise DatasetConfigError(f"{what}: {name!r} given twice")
        seen.add(name)
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) or share < 0:
            raise DatasetConfigError(f"{what}: the share of {name!r} must be a finite number >= 0, got {share!r}")
    total = sum(share for _, share in items)
    if not items or total <= 0:
        raise DatasetConfigError(f"{what}: at least one share must be positive")
    return tuple((name, float(share) / total) for name, share in items)


def parse_shares(text: str, *, what: str = "--splits") -> dict[str, float]:
    """Parse ``"train=0.6,val=0.2,test=0.2"`` into a dict (shares not yet normalised).

    Raises:
        DatasetConfigError: a part is not ``name=number``, a name repeats, or a share is negative.
    """
    result: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise DatasetConfigError(f"{what}: expected name=share, got {part!r}")
        try:
            share = float(value)
        except ValueError:
            raise DatasetConfigError(f"{what}: the share of {name!r} is not a number: {value.strip()!r}") from None
        if not math.isfinite(share) or share < 0:
            raise DatasetConfigError(f"{what}: the share of {name!r} must be >= 0, got {value.strip()!r}")
        if name in result:
            raise DatasetConfigError(f"{what}: {name!r} given twice")
        result[name] = share
    if not result:
        raise DatasetConfigError(f"{what}: empty")
    return result


# ====================================================================== the plan
@dataclass(frozen=True)
class ExampleSpec:
    """What one example is: which environment, which split and index, which query attribute.

    Attributes:
        environment_id: 0..E-1.
        local_index: the example's index within its environment, 0..S-1 (part of its seed).
        split: split name; image_index: 0-based index within the split.
        query_attribute: the attribute the question must ask about.
    """

    environment_id: int
    local_index: int
    split: str
    image_index: int
    query_attribute: str

    @property
    def file_name(self) -> str:
        return FILE_PATTERN % self.image_index

    @property
    def image_filename(self) -> str:
        return f"CLEVR_{self.split}_{self.image_index:06d}.png"


def largest_remainder(total: int, shares: Iterable[tuple[str, float]]) -> dict[str, int]:
    """Integer counts summing to ``total`` proportional to ``shares`` (Hamilton / largest remainder;
    ties go to the earlier name)."""
    shares = list(shares)
    exact = [(name, total * share) for name, share in shares]
    counts = {name: int(math.floor(x)) for name, x in exact}
    left = total - sum(counts.values())
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i][1] - math.floor(exact[i][1])), i))
    for i in order[:left]:
        counts[exact[i][0]] += 1
    return counts


def _low_discrepancy_labels(counts: Mapping[str, int]) -> list[str]:
    """A label sequence with exactly ``counts[name]`` of each label in which every prefix holds each
    label in proportion (+-1): at each step the label furthest below its target is emitted."""
    total = sum(counts.values())
    given = {name: 0 for name in counts}
    labels = []
    for step in range(1, total + 1):
        name = max(counts, key=lambda n: (counts[n] * step / total - given[n], -list(counts).index(n)))
        given[name] += 1
        labels.append(name)
    return labels


def derive_seed(seed: int, *parts: object) -> int:
    """A 64-bit seed from SHA-256 of ``seed`` and ``parts`` (stable across Python versions/processes)."""
    text = "/".join(["clevr-poc/dataset", str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def plan_examples(config: DatasetConfig) -> list[ExampleSpec]:
    """Every example of the dataset, in (split, image_index) order; see the module docstring."""
    E, S = config.environments, config.scenes_per_environment
    split_counts = largest_remainder(config.total, config.splits)
    labels = _low_discrepancy_labels(split_counts)
    by_split: dict[str, list[tuple[int, int]]] = {name: [] for name in config.split_names}
    for position, label in enumerate(labels):  # environment-major positions
        by_split[label].append((position // S, position % S))
    ordered = [(name, sorted(by_split[name], key=lambda ek: (ek[1], ek[0]))) for name in config.split_names]
    # query attributes: exact global quotas laid over the splits by a low-discrepancy sequence (each split
    # within +-1 of its share), then shuffled within each split (decorrelated from the environment order)
    attributes = _low_discrepancy_labels(largest_remainder(config.total, config.query_shares))
    specs: list[ExampleSpec] = []
    start = 0
    for name, members in ordered:  # members in round-robin order over environments
        chunk = attributes[start:start + len(members)]
        start += len(members)
        random.Random(derive_seed(config.seed, "query-attributes", name)).shuffle(chunk)
        for image_index, ((env, local), attribute) in enumerate(zip(members, chunk)):
            specs.append(ExampleSpec(env, local, name, image_index, attribute))
    return specs


# ====================================================================== one example (runs in workers)
@dataclass(frozen=True)
class ExampleTask:
    """Picklable work item: the spec, the environment and the settings the worker needs.

    ``visibility``: the layout check (:attr:`DatasetConfig.visibility`; None: no check). ``seed`` is the
    dataset seed (it also gives the render seed of the example's images). ``sampler_state``: the
    environment's :class:`~clevr_poc.generation.scenes.SamplerState` (prepared once per environment
    by :func:`prepare_dataset_environments`), or None: the worker builds its sampler from scratch.
    ``exact_visibility``: ray-cast every layout (the reference path, same results, slower) instead of
    trying the cheap bound first (:meth:`VisibilityCheck.check` with ``exact_pixels=False``). Neither
    changes the example.
    """

    spec: ExampleSpec
    environment: Environment
    seed: int
    max_attempts: int
    fallback: tuple[str, ...]
    visibility: VisibilityCheck | None = VisibilityCheck()
    sampler_state: Any = None
    exact_visibility: bool = False


@dataclass(frozen=True)
class ExampleResult:
    """What a worker sends back: the three JSON documents (text, as written) and diagnostics.

    Attributes:
        spec: the example's spec.
        complete_json, partial_json, question_json: file contents (UTF-8 text ending in a newline).
        query_attribute: the attribute actually asked about (differs from ``spec.query_attribute``
            only after a fallback).
        attempts: attempts used (1 = first try), over all attributes tried.
        placement_failures: attempts whose layout failed.
        seconds: time spent (diagnostic; not written to the dataset).
        layouts_checked: layouts given to the visibility check; visibility_rejections: of those, the
            rejected ones; visibility_resamples: scene graphs given up after ``max_relayouts``
            re-placements; rejected_objects: ``{"occluded": k, "too_small": m}`` objects under the minimum
            summed over rejected layouts; rejected_images: ``{"complete": k, "partial": m}`` failing image
            per rejected layout.
        visibility_seconds: time spent in the check (diagnostic; not written).
    """

    spec: ExampleSpec
    complete_json: str
    partial_json: str
    question_json: str
    query_attribute: str
    attempts: int
    placement_failures: int
    seconds: float
    layouts_checked: int = 0
    visibility_rejections: int = 0
    visibility_resamples: int = 0
    rejected_objects: Mapping[str, int] = field(default_factory=dict)
    rejected_images: Mapping[str, int] = field(default_factory=dict)
    visibility_seconds: float = 0.0

    def generation_json(self) -> dict[str, int]:
        """The ``generation`` object of the complete scene file (deterministic counts only)."""
        return {"attempts": self.attempts, "placement_failures": self.placement_failures,
                "layouts_checked": self.layouts_checked, "visibility_rejections": self.visibility_rejections,
                "visibility_occluded": self.rejected_objects.get("occluded", 0),
                "visibility_too_small": self.rejected_objects.get("too_small", 0),
                "visibility_rejected_complete": self.rejected_images.get("complete", 0),
                "visibility_rejected_partial": self.rejected_images.get("partial", 0),
                "visibility_resamples": self.visibility_resamples}


_WORKER_CACHE: dict[str, Any] = {}


def _components(environment: Environment, state=None):
    """Per-process cache of the scene sampler (per environment; built from ``state`` when given) and
    the question generator."""
    from clevr_poc.generation.questions import QuestionGenerator

    generator = _WORKER_CACHE.get("generator")
    if generator is None:
        generator = _WORKER_CACHE["generator"] = QuestionGenerator()
    return _sampler(environment, state), generator


def _sampler(environment: Environment, state=None):
    from clevr_poc.generation.scenes import SceneSampler

    samplers = _WORKER_CACHE.setdefault("samplers", {})
    key = (environment.id, environment.num_objects, environment.constraints_asp())
    sampler = samplers.get(key)
    if sampler is None:
        if len(samplers) >= 256:
            samplers.pop(next(iter(samplers)))
        sampler = samplers[key] = SceneSampler(environment, state=state)
    return sampler


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False) + "\n"


def generate_example(task: ExampleTask) -> ExampleResult:
    """Generate one example (complete scene, layout, visibility check, partial scene, labelled question).

    Per attempt: draw a scene graph, place it, choose the hidden object, generate the question (none:
    next attempt), check the layout from the render camera (``task.visibility``; on failure re-place,
    re-choose and re-ask up to ``max_relayouts`` times, then give the scene graph up). Without a check,
    the random draws are those of format version 1.

    Deterministic in ``task``. Raises :class:`GenerationError` when no attribute yields a question.
    """
    from clevr_poc.generation.layout import PlacementError, place_objects
    from clevr_poc.generation.scenes import choose_hidden, make_partial
    from clevr_poc.rendering.dataset import image_seed

    started = time.perf_counter()
    spec, environment, check = task.spec, task.environment, task.visibility
    sampler, generator = _components(environment, task.sampler_state)
    attributes = (spec.query_attribute,) + tuple(a for a in task.fallback if a != spec.query_attribute)
    camera_seed = image_seed(task.seed, spec.split, spec.image_filename)  # the renderer's seed for both images
    relayouts = 1 + (check.max_relayouts if check is not None else 0)
    attempts = placement_failures = layouts_checked = rejections = resamples = 0
    rejected_objects = {"occluded": 0, "too_small": 0}
    rejected_images = {"complete": 0, "partial": 0}
    visibility_seconds = 0.0
    for round_, attribute in enumerate(attributes):
        for attempt in range(task.max_attempts):
            attempts += 1
            rng = random.Random(derive_seed(task.seed, "example", environment.id, spec.local_index,
                                            round_ * task.max_attempts + attempt))
            graph = sampler.sample(rng)
            complete = question = None
            for _ in range(relayouts):
                try:
                    placed = place_objects(graph, rng).scene
                except PlacementError:
                    placement_failures += 1
                    break
                hidden = choose_hidden(placed, rng)
                # the question first (a few ms): the check (tens of ms) only runs on layouts worth keeping
                question = generator.generate(environment, placed, hidden, rng, query_attribute=attribute)
                if question is None:  # no valid question about this scene: next attempt
                    break
                if check is None:
                    complete = placed
                    break
                layouts_checked += 1
                check_started = time.perf_counter()
                outcome = check.check(placed, hidden, camera_seed, exact_pixels=task.exact_visibility)
                visibility_seconds += time.perf_counter() - check_started
                if outcome.ok:
                    complete = placed
                    break
                rejections += 1
                rejected_images[outcome.image] += 1
                for _, _, reason in outcome.offending:
                    rejected_objects[reason] += 1
            else:
                resamples += 1
            if complete is None:
                continue
            result = ExampleResult(spec, "", "", "", attribute, attempts, placement_failures, 0.0,
                                   layouts_checked, rejections, resamples, rejected_objects, rejected_images,
                                   visibility_seconds)
            bookkeeping = {"split": spec.split, "image_index": spec.image_index,
                           "image_filename": spec.image_filename}
            extra = {"constraint_type_index": environment.id, "generation": result.generation_json()}
            complete = replace(complete, extra={**dict(complete.extra), **extra}, **bookkeeping)
            partial, _ = make_partial(complete, hidden)
            partial = replace(partial, extra={k: v for k, v in partial.extra.items() if k != "generation"})
            question = replace(question, question_index=spec.image_index, environment_id=environment.id,
                               **bookkeeping)
            return replace(result, complete_json=_dumps(complete.to_json()), partial_json=_dumps(partial.to_json()),
                           question_json=_dumps(question.to_json()), seconds=time.perf_counter() - started)
    raise GenerationError(
        f"environment {environment.id}, example {spec.local_index}: no valid question about any of "
        f"{list(attributes)} in {task.max_attempts} attempts each")


# ====================================================================== the writer
@dataclass(frozen=True)
class DatasetSummary:
    """What :func:`generate_dataset` did.

    Attributes:
        out_dir: the dataset folder.
        config: its settings.
        examples: examples in the dataset (E x S).
        generated: examples generated by this call; skipped: examples already on disk (resume).
        environments_seconds, examples_seconds, stats_seconds: wall time of each phase of this call.
        attempts: attempts used by the examples generated in this call; fallbacks: of those, examples
            whose query attribute had to change.
        stats: the content of ``stats.json``.
        layouts_checked, visibility_rejections: visibility checks run and layouts rejected by this call;
        visibility_seconds: time spent in the check by this call (summed over workers).
        stale_temp_files: temp files of a killed earlier run removed before resuming.
    """

    out_dir: Path
    config: DatasetConfig
    examples: int
    generated: int
    skipped: int
    environments_seconds: float
    examples_seconds: float
    stats_seconds: float
    attempts: int
    fallbacks: int
    stats: Mapping[str, Any] = field(repr=False)
    layouts_checked: int = 0
    visibility_rejections: int = 0
    visibility_seconds: float = 0.0
    stale_temp_files: int = 0

    @property
    def questions_per_second(self) -> float:
        return self.generated / self.examples_seconds if self.examples_seconds > 0 else float("nan")


def _sample_environment_task(args: tuple[int, int]) -> Environment:
    from clevr_poc.environments.sampler import derived_seed, sample_environment

    seed, env_id = args
    return sample_environment(derived_seed(seed, env_id), env_id=env_id)


def sample_dataset_environments(config: DatasetConfig, *, workers: int = 1, executor: str = "local",
                                ray_address: str | None = None, progress: bool = False) -> list[Environment]:
    """The dataset's environments: ``sample_environments(E, seed)``, computed in parallel (environment k
    comes from a seed derived from (seed, k), so it does not depend on E or on the worker count)."""
    from clevr_poc.executors import map_ordered

    tasks = [(config.seed, k) for k in range(config.environments)]
    return list(map_ordered(_sample_environment_task, tasks, workers=workers, executor=executor,
                            ray_address=ray_address, progress="environments" if progress else False))


def _prepare_environment_task(args: tuple[int, int]):
    """Worker: environment ``args[1]`` of the dataset and its scene sampler's state (the sampler stays
    in this process's cache for its own examples)."""
    environment = _sample_environment_task(args)
    return environment, _sampler(environment).state()


def prepare_dataset_environments(config: DatasetConfig, *, workers: int = 1, executor: str = "local",
                                 ray_address: str | None = None, progress: bool = False) -> tuple[list, list]:
    """The dataset's environments (as :func:`sample_dataset_environments`) and, for each, its scene
    sampler's :class:`~clevr_poc.generation.scenes.SamplerState` (calibration, and the Gibbs pool of
    environments that need one), computed once per environment in parallel, so that the workers that
    generate the examples do not each repeat it. Returns ``(environments, states)``."""
    from clevr_poc.executors import map_ordered

    tasks = [(config.seed, k) for k in range(config.environments)]
    pairs = list(map_ordered(_prepare_environment_task, tasks, workers=workers, executor=executor,
                             ray_address=ray_address, progress="environments" if progress else False))
    return [env for env, _ in pairs], [state for _, state in pairs]


def _open_folder(out_dir: Path, config: DatasetConfig) -> None:
    manifest = out_dir / MANIFEST
    if manifest.is_file():
        data = read_json(manifest)
        version = data.get("format_version") if isinstance(data, Mapping) else None
        if version != config.format_version:
            change = FORMAT_HISTORY.get(config.format_version, "")
            raise DatasetConfigError(
                f"{out_dir} holds a dataset of format version {version!r}, this clevr_poc writes version "
                f"{config.format_version} ({change}); it cannot be resumed: generate it again in a new folder")
        existing = DatasetConfig.from_json(data, source=manifest)
        if not existing.same_as(config):
            ours, theirs = config.to_json(), existing.to_json()
            diff = ", ".join(f"{k}: folder has {theirs[k]!r}, asked for {ours[k]!r}"
                             for k in ours if ours[k] != theirs.get(k)) or "shares differ"
            raise DatasetConfigError(f"{out_dir} holds a dataset generated with other settings ({diff}); "
                                     f"use another folder or the same settings to resume")
        return
    if out_dir.exists() and not out_dir.is_dir():
        raise DatasetConfigError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(not p.name.startswith(".") for p in out_dir.iterdir()):
        raise DatasetConfigError(f"{out_dir} is not empty and has no {MANIFEST}: refusing to write a dataset into it")
    atomic_write_json(manifest, config.to_json(), indent=2)


def remove_stale_generation_temps(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files a killed ``generate`` left in the folders it writes (the dataset folder,
    ``environments/``, ``figures/`` and every split folder of ``complete/scenes``, ``incomplete/scenes`` and
    ``incomplete/questions``): only :func:`clevr_poc._io.remove_stale_temp_files`' own names. Returns
    the removed paths."""
    out_dir = Path(out_dir)
    folders = [out_dir, out_dir / "environments", out_dir / "figures"]
    for kind in ("complete/scenes", "incomplete/scenes", "incomplete/questions"):
        root = out_dir / kind
        folders += sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return [path for folder in folders for path in remove_stale_temp_files(folder)]


def _write_environments(out_dir: Path, environments: list[Environment]) -> None:
    for env in environments:
        path = out_dir / "environments" / f"{env.id}.lp"
        text = env.to_asp()
        if path.is_file():
            if path.read_text(encoding="utf-8") != text:
                raise DatasetConfigError(f"{path} differs from the environment the settings give (was the folder "
                                         f"generated by another clevr_poc version?); use a new folder")
        else:
            atomic_write_text(path, text)


def _done(out_dir: Path, specs: list[ExampleSpec]) -> set[tuple[str, int]]:
    listing: dict[tuple[str, str], set[str]] = {}

    def names(kind: str, split: str) -> set[str]:
        key = (kind, split)
        if key not in listing:
            folder = out_dir / kind / split
            listing[key] = set(os.listdir(folder)) if folder.is_dir() else set()
        return listing[key]

    done = set()
    for spec in specs:
        name = spec.file_name
        if all(name in names(kind, spec.split) for kind in
               ("incomplete/questions", "incomplete/scenes", "complete/scenes")):
            done.add((spec.split, spec.image_index))
    return done


def _write_example(out_dir: Path, result: ExampleResult) -> None:
    spec = result.spec
    atomic_write_text(out_dir / "complete" / "scenes" / spec.split / spec.file_name, result.complete_json)
    atomic_write_text(out_dir / "incomplete" / "scenes" / spec.split / spec.file_name, result.partial_json)
    # the question file marks the example done: written last
    atomic_write_text(out_dir / "incomplete" / "questions" / spec.split / spec.file_name, result.question_json)


def generate_dataset(
    out_dir: str | os.PathLike[str],
    *,
    environments: int,
    scenes_per_environment: int,
    seed: int,
    splits: Mapping[str, float] | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    query_shares: Mapping[str, float] | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    progress: bool = True,
    chunksize: int = 4,
    on_example: Callable[[ExampleResult], None] | None = None,
    visibility_check: str = "both",
    min_visible_pixels: int | None = None,
    visibility_relayouts: int = DEFAULT_VISIBILITY_RELAYOUTS,
) -> DatasetSummary:
    """Generate (or finish) a CLEVR-POC dataset in ``out_dir``; see the module docstring.

    Args:
        out_dir: the dataset folder (created; must be empty or hold a dataset with the same settings).
        environments: E, number of environments (paper: about 30).
        scenes_per_environment: S; the dataset has E x S examples (one question per scene).
        seed: random seed; the same settings give byte-identical files.
        splits: split name -> share (default train 0.6 / val 0.2 / test 0.2).
        workers, executor, ray_address: where to run (:func:`clevr_poc.executors.map_ordered`); they
            do not change the output.
        query_shares: attribute -> share of questions (default 0.4/0.4/0.1/0.1, paper Appendix B).
        max_attempts: attempts per example and attribute before falling back to another attribute.
        progress: show tqdm progress bars.
        chunksize: examples per worker task.
        on_example: called after each example is written (e.g. to report progress or, in tests, to stop).
        visibility_check: ``"both"`` (default), ``"partial"`` or ``"off"`` (module docstring).
        min_visible_pixels: pixels each checked object must cover (default: the renderer's, 40 at 320 x 240).
        visibility_relayouts: re-placements of a scene graph failing the check before it is redrawn.

    Returns:
        :class:`DatasetSummary`.

    Raises:
        DatasetConfigError: bad settings, or ``out_dir`` holds something else.
        GenerationError: an example has no valid question for any attribute.
        ExecutorError: bad executor settings.
    """
    from clevr_poc.executors import ExecutorConfig, map_ordered, ray_session

    config = DatasetConfig(environments, scenes_per_environment, seed,
                           tuple((splits or DEFAULT_SPLITS).items()),
                           tuple((query_shares or DEFAULT_QUERY_SHARES).items()), max_attempts,
                           visibility_check=visibility_check, min_visible_pixels=min_visible_pixels,
                           visibility_relayouts=visibility_relayouts)
    ExecutorConfig(workers, executor, ray_address)  # validate before touching the folder
    out_dir = Path(out_dir)
    _open_folder(out_dir, config)
    stale = remove_stale_generation_temps(out_dir)  # a killed run's leftovers (SIGKILL, power loss)

    session = ray_session(workers, ray_address) if executor == "ray" else _null_context()
    with session:
        started = time.perf_counter()
        envs, states = prepare_dataset_environments(config, workers=workers, executor=executor,
                                                    ray_address=ray_address, progress=progress)
        _write_environments(out_dir, envs)
        environments_seconds = time.perf_counter() - started

        started = time.perf_counter()
        specs = plan_examples(config)
        done = _done(out_dir, specs)
        visibility = config.visibility
        tasks = [ExampleTask(s, envs[s.environment_id], config.seed, config.max_attempts, config.fallback_attributes,
                             visibility, states[s.environment_id])
                 for s in specs if (s.split, s.image_index) not in done]
        attempts = fallbacks = layouts_checked = rejections = 0
        visibility_seconds = 0.0
        for result in map_ordered(generate_example, tasks, workers=workers, executor=executor,
                                  ray_address=ray_address, chunksize=chunksize,
                                  progress="questions" if progress else False):
            _write_example(out_dir, result)
            attempts += result.attempts
            fallbacks += result.query_attribute != result.spec.query_attribute
            layouts_checked += result.layouts_checked
            rejections += result.visibility_rejections
            visibility_seconds += result.visibility_seconds
            if on_example is not None:
                on_example(result)
        examples_seconds = time.perf_counter() - started

    started = time.perf_counter()
    from clevr_poc.generation.stats import write_report

    stats = write_report(out_dir, config, envs, specs)
    stats = {**stats, "generation": generation_stats(out_dir, config, specs)}
    atomic_write_json(out_dir / "stats.json", stats, indent=2)
    stats_seconds = time.perf_counter() - started
    return DatasetSummary(out_dir, config, len(specs), len(tasks), len(done), environments_seconds,
                          examples_seconds, stats_seconds, attempts, fallbacks, stats, layouts_checked, rejections,
                          visibility_seconds, len(stale))


#: Counters of the ``generation`` object of complete scene files, summed by :func:`generation_stats`.
GENERATION_COUNTERS: tuple[str, ...] = (
    "attempts", "placement_failures", "layouts_checked", "visibility_rejections", "visibility_occluded",
    "visibility_too_small", "visibility_rejected_complete", "visibility_rejected_partial", "visibility_resamples",
)


def generation_stats(out_dir: str | os.PathLike[str], config: DatasetConfig, specs: Iterable[ExampleSpec]
                     ) -> dict[str, Any]:
    """The ``generation`` section of ``stats.json``: the visibility settings and the sums of the
    ``generation`` counters of every complete scene file of the plan (so a resumed run counts the whole
    dataset), plus ``visibility_rejection_rate`` = rejected / checked layouts (0 when none was checked).

    Raises:
        FormatError: a complete scene file is missing, malformed, or has no ``generation`` object.
    """
    out_dir = Path(out_dir)
    totals = dict.fromkeys(GENERATION_COUNTERS, 0)
    for spec in specs:
        path = out_dir / "complete" / "scenes" / spec.split / spec.file_name
        data = read_json(path)
        counts = data.get("generation") if isinstance(data, Mapping) else None
        if not isinstance(counts, Mapping):
            raise FormatError("missing the 'generation' object", source=path, field="generation")
        for key in GENERATION_COUNTERS:
            value = counts.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise FormatError("expected a count", source=path, field=f"generation.{key}", value=value)
            totals[key] += value
    checked = totals["layouts_checked"]
    rate = round(totals["visibility_rejections"] / checked, 6) if checked else 0.0
    return {"visibility": config.visibility_json(), **totals, "visibility_rejection_rate": rate}


class _null_context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
