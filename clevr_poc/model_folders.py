"""Where the shipped checkpoints live and whether a models folder holds them (nothing is loaded here):
``models/perception/perception.pt`` and ``models/parser_bilstm/{config.json,vocab.json,weights.pt}`` of
the repository, or the folder named by ``$CLEVR_POC_MODELS``; the errors of building a
:class:`~clevr_poc.pipeline.Pipeline`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Sequence

from clevr_poc.errors import ClevrPocError

#: Where a scene comes from: perceived from the image, or given by the caller.
SCENE_SOURCES: tuple[str, ...] = ("perception", "given")
#: Question parsers: BiLSTM seq2seq, few-shot LLM, or the given (gold) ASP query.
PARSERS: tuple[str, ...] = ("bilstm", "llm", "given")
#: Environment variable naming the models folder (overrides the repository's ``models/``).
MODELS_ENV = "CLEVR_POC_MODELS"
#: Sub-folders of a models folder.
PERCEPTION_DIR = "perception"
PARSER_DIR = "parser_bilstm"
#: Files a checkpoint folder must hold.
PERCEPTION_FILES: tuple[str, ...] = ("perception.pt",)
PARSER_FILES: tuple[str, ...] = ("config.json", "vocab.json", "weights.pt")

_HOW_TO_GET = {
    PERCEPTION_DIR: ("the perception model is shipped in models/perception/ of a clone of the clevr_poc repository: "
                     f"run from the clone's root, or point {MODELS_ENV}, --perception-path or from_pretrained(path) "
                     "at it; or train one: "
                     "python -m clevr_poc.perception train --dataset DIR --out models/perception"),
    PARSER_DIR: ("the BiLSTM parser is shipped in models/parser_bilstm/ of a clone of the clevr_poc repository: "
                 f"run from the clone's root, or point {MODELS_ENV}, --parser-path or from_pretrained(path) at it; "
                 "or train one: "
                 "python -m clevr_poc.train_parser --dataset DIR --out models/parser_bilstm"),
}


class PipelineError(ClevrPocError):
    """The pipeline cannot be built (a missing optional dependency, bad settings) or cannot answer
    (a question the parser could not turn into ASP, a missing input)."""


class CheckpointNotFoundError(PipelineError, FileNotFoundError):
    """A checkpoint folder or file is missing.

    Attributes:
        path: the missing folder or file.
        hint: how to get it.
    """

    def __init__(self, what: str, path: Path, hint: str) -> None:
        self.path = Path(path)
        self.hint = hint
        super().__init__(f"{what} not found: {self.path} ({hint})")


def default_models_dir() -> Path:
    """The models folder: ``$CLEVR_POC_MODELS`` if set, else ``models/`` of the repository this package
    was loaded from (a clone, or an editable install), else ``./models``.

    The folder is not checked here (see :meth:`Pipeline.from_pretrained`).
    """
    env = os.environ.get(MODELS_ENV)
    if env:
        return Path(env).expanduser()
    repository = Path(__file__).resolve().parent.parent / "models"
    if repository.is_dir():
        return repository
    local = Path.cwd() / "models"
    return local if local.is_dir() else repository


def _checkpoint(folder: Path, kind: str, files: Sequence[str]) -> Path:
    if not folder.is_dir():
        raise CheckpointNotFoundError(f"{kind} checkpoint folder", folder, _HOW_TO_GET[kind])
    for name in files:
        if not (folder / name).is_file():
            raise CheckpointNotFoundError(f"{kind} checkpoint file", folder / name, _HOW_TO_GET[kind])
    return folder


def check_checkpoints(path_or_name: str | os.PathLike[str] | None = None, *, scene_source: str = "perception",
                      parser: str = "bilstm", perception_path: str | os.PathLike[str] | None = None,
                      parser_path: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """The checkpoint folders :meth:`Pipeline.from_pretrained` would load, checked (nothing is loaded).

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
    found: dict[str, Path] = {}
    if scene_source == "perception":
        if perception_path is None and not root.is_dir():
            raise CheckpointNotFoundError("models folder", root, _HOW_TO_GET[PERCEPTION_DIR])
        chosen = Path(perception_path) if perception_path else root / PERCEPTION_DIR
        if perception_path and chosen.is_file():   # the model file itself, as Perception.from_pretrained reads it
            found[PERCEPTION_DIR] = chosen
        else:
            found[PERCEPTION_DIR] = _checkpoint(chosen, PERCEPTION_DIR, PERCEPTION_FILES)
    if parser == "bilstm":
        if parser_path is None and not root.is_dir():
            raise CheckpointNotFoundError("models folder", root, _HOW_TO_GET[PARSER_DIR])
        found[PARSER_DIR] = _checkpoint(Path(parser_path) if parser_path else root / PARSER_DIR, PARSER_DIR,
                                        PARSER_FILES)
    return found


def _require(module: str, extra: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise PipelineError(f"{what} needs {module}: pip install '.[{extra}]' in the clevr_poc "
                            f"folder")
