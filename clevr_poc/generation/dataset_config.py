"""The settings of a generated dataset (:class:`DatasetConfig`), their defaults, the size caps and the
``--splits`` / ``--query-shares`` parser.

The settings are written to the dataset folder's manifest (:data:`MANIFEST`) and checked on resume by
:func:`clevr_poc.generation.dataset_writer.generate_dataset`; see that module for what they mean on disk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from clevr_poc import domain, limits
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
            ``image_size`` (53 at 320 x 320); stored resolved.
        visibility_relayouts: re-placements of a scene graph failing the check before it is redrawn.
        image_size: (width, height) of the images the check assumes (the renderer's default, the official 320 x 320).
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
    def from_json(cls, data: object, *, source: object = None) -> "DatasetConfig":
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

