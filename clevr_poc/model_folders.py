"""Where the shipped checkpoints live and whether a models folder holds them (nothing is loaded here):
``perception/perception.pt`` and ``parser_bilstm/{config.json,vocab.json,weights.pt}`` of the models
folder shipped with the package (``clevr_poc/models`` of an installed wheel, ``models/`` of a clone), or
of the folder named by ``$CLEVR_POC_MODELS``; the errors of building a :class:`~clevr_poc.pipeline.Pipeline`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Mapping, Sequence

from clevr_poc.errors import ClevrPocError

#: Where a scene comes from: perceived from the image, or given by the caller.
SCENE_SOURCES: tuple[str, ...] = ("perception", "given")
#: Question parsers: BiLSTM seq2seq, few-shot LLM, or the given (gold) ASP query.
PARSERS: tuple[str, ...] = ("bilstm", "llm", "given")
#: Environment variable naming the models folder (overrides the shipped one).
MODELS_ENV = "CLEVR_POC_MODELS"
#: Sub-folders of a models folder.
PERCEPTION_DIR = "perception"
PARSER_DIR = "parser_bilstm"
#: Files a checkpoint folder must hold.
PERCEPTION_FILES: tuple[str, ...] = ("perception.pt",)
PARSER_FILES: tuple[str, ...] = ("config.json", "vocab.json", "weights.pt")
#: The folder of this package (``.../site-packages/clevr_poc`` once installed, ``CLONE/clevr_poc`` in a clone).
_PACKAGE = Path(__file__).resolve().parent

#: How the Python API points at checkpoints (a command passes its own options, e.g. ``--models DIR``).
API_OPTIONS: dict[str, str] = {PERCEPTION_DIR: "from_pretrained(path) or perception_path=",
                               PARSER_DIR: "from_pretrained(path) or parser_path="}
_TRAIN = {PERCEPTION_DIR: "python -m clevr_poc.perception train --dataset DIR --out DIR",
          PARSER_DIR: "python -m clevr_poc.train_parser --dataset DIR --out DIR"}
_WHAT = {PERCEPTION_DIR: "the perception model", PARSER_DIR: "the BiLSTM parser"}


def _how_to_get(kind: str, options: Mapping[str, str] | None) -> str:
    """How to get the ``kind`` checkpoint, naming the caller's options (default: :data:`API_OPTIONS`)."""
    option = (options or API_OPTIONS)[kind]
    return (f"{_WHAT[kind]} is shipped with clevr_poc as models/{kind}/ (clevr_poc/models/{kind}/ in an installed "
            f"package): point {option} or {MODELS_ENV} at a folder holding it, or train one: {_TRAIN[kind]}")


class PipelineError(ClevrPocError):
    """The pipeline cannot be built (a missing optional dependency, bad settings) or cannot answer
    (a question the parser could not turn into ASP, a missing input)."""


class CheckpointNotFoundError(PipelineError, FileNotFoundError):
    """A checkpoint folder or file is missing.

    Attributes:
        path: the missing folder or file.
        hint: how to get it.
        searched: the folders looked in for the default models folder (empty when a folder was named).
    """

    def __init__(self, what: str, path: Path, hint: str, searched: Sequence[Path] = ()) -> None:
        self.path = Path(path)
        self.hint = hint
        self.searched = tuple(Path(folder) for folder in searched)
        where = f"searched {', '.join(map(str, self.searched))}" if self.searched else str(self.path)
        super().__init__(f"{what} not found: {where} ({hint})")


def models_dir_candidates() -> tuple[Path, ...]:
    """The folders :func:`default_models_dir` looks in, in order: ``$CLEVR_POC_MODELS`` alone when it is
    set; else ``models/`` inside the package (an installed wheel ships it there), ``models/`` of the clone
    the package was loaded from (a clone or an editable install: the folder above the package holds
    ``pyproject.toml``), and ``./models`` of the working directory."""
    env = os.environ.get(MODELS_ENV)
    if env:
        return (Path(env).expanduser(),)
    candidates = [_PACKAGE / "models"]
    if (_PACKAGE.parent / "pyproject.toml").is_file():   # not site-packages/models of an unrelated install
        candidates.append(_PACKAGE.parent / "models")
    candidates.append(Path.cwd() / "models")
    return tuple(dict.fromkeys(candidates))


def default_models_dir() -> Path:
    """The models folder: the first of :func:`models_dir_candidates` that is a folder, else the first
    candidate (``$CLEVR_POC_MODELS``, or where an installed package keeps its models).

    The folder is not checked here (see :func:`check_checkpoints`).
    """
    candidates = models_dir_candidates()
    return next((folder for folder in candidates if folder.is_dir()), candidates[0])


def _checkpoint(folder: Path, kind: str, files: Sequence[str], options: Mapping[str, str] | None) -> Path:
    if not folder.is_dir():
        raise CheckpointNotFoundError(f"{kind} checkpoint folder", folder, _how_to_get(kind, options))
    for name in files:
        if not (folder / name).is_file():
            raise CheckpointNotFoundError(f"{kind} checkpoint file", folder / name, _how_to_get(kind, options))
    return folder


def check_checkpoints(path_or_name: str | os.PathLike[str] | None = None, *, scene_source: str = "perception",
                      parser: str = "bilstm", perception_path: str | os.PathLike[str] | None = None,
                      parser_path: str | os.PathLike[str] | None = None,
                      options: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The checkpoint folders :meth:`Pipeline.from_pretrained` would load, checked (nothing is loaded).

    Args:
        path_or_name: a models folder; None or ``"default"``: :func:`default_models_dir`.
        scene_source, parser: which parts are needed (see :meth:`Pipeline.from_pretrained`).
        perception_path, parser_path: checkpoint folders overriding ``path_or_name``.
        options: ``{"perception": ..., "parser_bilstm": ...}``: how the caller points at each checkpoint, named
            in the errors (a command's flags, e.g. ``"--models DIR"``); default :data:`API_OPTIONS`.

    Returns:
        ``{"perception": folder, "parser_bilstm": folder}``, only the parts the settings need (a
        ``perception_path`` that is a file, the model file itself, is returned as it is).

    Raises:
        PipelineError: an unknown ``scene_source`` or ``parser``.
        CheckpointNotFoundError: a folder or file is missing (naming it and how to get it).
    """
    if scene_source not in SCENE_SOURCES:
        raise PipelineError(f"scene_source must be one of {list(SCENE_SOURCES)}, got {scene_source!r}")
    if parser not in PARSERS:
        raise PipelineError(f"parser must be one of {list(PARSERS)}, got {parser!r}")
    default = path_or_name is None or (isinstance(path_or_name, str) and path_or_name == "default")
    root = default_models_dir() if default else Path(path_or_name)
    searched = models_dir_candidates() if default else ()
    found: dict[str, Path] = {}
    for kind, needed, override, files in ((PERCEPTION_DIR, scene_source == "perception", perception_path,
                                           PERCEPTION_FILES),
                                          (PARSER_DIR, parser == "bilstm", parser_path, PARSER_FILES)):
        if not needed:
            continue
        if override is None and not root.is_dir():
            raise CheckpointNotFoundError("models folder", root, _how_to_get(kind, options), searched)
        chosen = Path(override) if override else root / kind
        if kind == PERCEPTION_DIR and override and chosen.is_file():
            found[kind] = chosen   # the model file itself, as Perception.from_pretrained reads it
        else:
            found[kind] = _checkpoint(chosen, kind, files, options)
    return found


def _require(module: str, extra: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise PipelineError(f"{what} needs {module}: pip install '.[{extra}]' in the clevr_poc "
                            f"folder")
