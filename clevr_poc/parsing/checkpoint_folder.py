"""The output folder of ``python -m clevr_poc.train_parser``: refuse to train over a parser by accident.

A parser folder holds the files :meth:`~clevr_poc.parsing.seq2seq.BiLSTMParser.save_pretrained` writes
(:data:`clevr_poc.model_folders.PARSER_FILES`), the run's ``report.json`` and, while training,
``checkpoints/state.pt``; a shipped one also has a hand-written ``MODEL_CARD.md`` and a
``training_report.json``, which describe *that* parser (:data:`CARD_FILES`). Training into a folder that is
not empty, unless it is resuming an interrupted run of its own (``checkpoints/state.pt`` is there), needs
``--overwrite``; the card files are removed when the new parser is written, so none is left describing
weights they do not match.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from clevr_poc.errors import OutputPathError
from clevr_poc.model_folders import PARSER_FILES

#: Files written by a training run: the parser, its report, the resume state and the pretrained copy.
RUN_FILES: tuple[str, ...] = (*PARSER_FILES, "report.json")
RUN_FOLDERS: tuple[str, ...] = ("checkpoints", "pretrained")
#: Files that describe one trained parser and go stale when its weights are replaced.
CARD_FILES: tuple[str, ...] = ("MODEL_CARD.md", "training_report.json")
#: The resume state of an interrupted run (``TrainingRun`` writes it there).
RESUME_STATE = Path("checkpoints") / "state.pt"


def prepare_checkpoint_folder(out: str | os.PathLike[str], *, overwrite: bool = False) -> list[str]:
    """Check (and with ``overwrite`` clear) the output folder of a training run before it starts.

    Args:
        out: the ``--out`` folder (need not exist).
        overwrite: remove the files of an earlier parser (:data:`RUN_FILES`, :data:`RUN_FOLDERS`,
            :data:`CARD_FILES`) instead of refusing; other files are left alone.

    Returns:
        the names removed (sorted; empty without ``overwrite``).

    Raises:
        OutputPathError: the folder is not empty and holds no resume state, and ``overwrite`` is false
            (the message names up to five of its entries and the way out).
    """
    folder = Path(out)
    if not folder.is_dir():
        return []
    entries = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    if not overwrite:
        if entries and not (folder / RESUME_STATE).is_file():
            shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
            raise OutputPathError(f"not empty (holds {shown}); pass --overwrite to replace the parser in it, "
                                  "or choose a new folder", option="--out", path=out)
        return []
    removed = []
    for name in (*RUN_FILES, *CARD_FILES):
        if (folder / name).is_file():
            (folder / name).unlink()
            removed.append(name)
    for name in RUN_FOLDERS:
        if (folder / name).is_dir() and not (folder / name).is_symlink():
            shutil.rmtree(folder / name)
            removed.append(name + "/")
    return sorted(removed)


def remove_stale_cards(out: str | os.PathLike[str]) -> list[str]:
    """Remove :data:`CARD_FILES` from ``out`` (called when a new parser has been written there)."""
    removed = []
    for name in CARD_FILES:
        path = Path(out) / name
        if path.is_file():
            path.unlink()
            removed.append(name)
    return removed
