"""Answer extraction: the official ScienceQA and M3CoT rules, a robust mode, and the unparseable policy.

Official ScienceQA rule (``models/run_gpt3.py``): ``re.findall(r'The answer is ([A-Z]).', text)`` — the
``.`` is the regex wildcard, exactly as released — and the output counts as parsed only when there is
exactly one match and the letter names one of the options.

Official M3CoT rule (``utils/metric.py::judge_answer``): keep the text after the last ``[Answer]`` (if
any); the last ``(X)`` (any case); else the last option (in option order) whose text occurs in the output
(case-insensitive); else the last option letter that occurs as a space-separated word after replacing
``\\n.,!?`` by spaces, upper case first, then lower case (so the article "a" reads as option A — an
official quirk kept here).

Robust mode (ours) first strips end-of-sequence markers such as ``</s>`` and ``<|im_end|>`` and accepts
common shapes the official rules miss: "Answer: B", "The answer is (B)", "B." or "(B)" at the start, an
output that is exactly an option's text. For M3CoT it drops the lower-case-letter fallback and orders
option-text matches by position in the output instead of option order.

Unparseable outputs: :class:`FailurePolicy` ``wrong`` (default: scored as incorrect) or ``random``
(a uniform random option from a seeded generator, as the official ScienceQA runner does). The share of
unparseable outputs is always reported.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from clevr_poc.mcot.mcot_data import OPTION_LETTERS

#: End-of-sequence / turn markers removed in robust mode.
EOS_MARKERS: tuple[str, ...] = ("</s>", "<s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<eos>",
                                "<end_of_turn>", "<|end_of_text|>")

_SQA_OFFICIAL = re.compile(r"The answer is ([A-Z]).")
_ANSWER_PHRASE = re.compile(r"\banswer(?: is|:)\s*:?\s*(?:option\s*)?\(?([A-F])\)?(?![A-Za-z0-9])", re.IGNORECASE)
#: "(B) ...", "B. ...", "B) ...", "B: ...", "Answer: B" or just "B" at the start of the output (upper case only,
#: so that the article "A" in "A dog ..." is not read as an option).
_LEADING_LETTER = re.compile(r"^\s*(?:(?i:answer)\s*:?\s*)?(?:\(([A-F])\)|([A-F])[.):,](?=\s|$)|([A-F])\s*$)")
_PAREN_ANY = re.compile(r"\(([A-Za-z])\)")
_PAREN_UPPER = re.compile(r"\(([A-F])\)")


class FailurePolicy(str, Enum):
    """What an unparseable output counts as: ``wrong`` (default) or a seeded ``random`` guess."""

    WRONG = "wrong"
    RANDOM = "random"


class ExtractionMode(str, Enum):
    """``official`` (the released rule, default) or ``robust`` (see the module docstring)."""

    OFFICIAL = "official"
    ROBUST = "robust"


@dataclass(frozen=True)
class Extraction:
    """The option read from one output.

    Attributes:
        letter: predicted option letter ("A"..), or None when the output is unparseable.
        method: which step found it: ``answer-phrase``, ``paren``, ``option-text``, ``letter``,
            ``lower-letter``, ``leading-letter`` or ``none``.
    """

    letter: str | None
    method: str

    @property
    def parsed(self) -> bool:
        return self.letter is not None

    def index(self) -> int | None:
        """0-based option index; None when unparseable, -1 for a letter beyond "F"."""
        if self.letter is None:
            return None
        return OPTION_LETTERS.index(self.letter) if self.letter in OPTION_LETTERS else -1


def strip_eos(text: str) -> str:
    """Remove end-of-sequence markers (:data:`EOS_MARKERS`) and surrounding whitespace."""
    for marker in EOS_MARKERS:
        text = text.replace(marker, "")
    return text.strip()


def _valid(letter: str, num_choices: int) -> bool:
    return letter in OPTION_LETTERS[:num_choices]


def _leading_letter(text: str) -> str | None:
    match = _LEADING_LETTER.match(text)
    return next((g for g in match.groups() if g), None) if match else None


def _exact_option(text: str, choices: Sequence[str]) -> str | None:
    cleaned = re.sub(r"^\s*(?:answer\s*:\s*)", "", text, flags=re.IGNORECASE).strip().strip(".!\"'").strip().lower()
    hits = [OPTION_LETTERS[i] for i, c in enumerate(choices) if c.strip().strip(".").lower() == cleaned]
    return hits[0] if len(hits) == 1 else None


# ----------------------------------------------------------------------------------------------------------
# ScienceQA
# ----------------------------------------------------------------------------------------------------------
def extract_scienceqa(text: str, num_choices: int, *, mode: ExtractionMode | str = ExtractionMode.OFFICIAL,
                      choices: Sequence[str] | None = None) -> Extraction:
    """Read the answer letter of a ScienceQA output ("The answer is X. BECAUSE: ...").

    Args:
        text: the model output. num_choices: number of options (2..5); a letter beyond them is unparseable.
        mode: ``official`` or ``robust``. choices: option texts (robust mode: an output that is exactly
            one option's text).
    """
    mode = ExtractionMode(mode)
    matches = _SQA_OFFICIAL.findall(text)
    if len(matches) == 1 and _valid(matches[0], num_choices):
        return Extraction(matches[0], "answer-phrase")
    if mode is ExtractionMode.OFFICIAL:
        return Extraction(None, "none")
    text = strip_eos(text)
    # The answer comes first in the QCM->A(L)E layout, so the first explicit answer phrase wins.
    for match in _ANSWER_PHRASE.finditer(text):
        letter = match.group(1).upper()
        if _valid(letter, num_choices):
            return Extraction(letter, "answer-phrase")
    letter = _leading_letter(text)
    if letter is not None and _valid(letter, num_choices):
        return Extraction(letter, "leading-letter")
    if choices:
        letter = _exact_option(text, choices)
        if letter is not None:
            return Extraction(letter, "option-text")
    return Extraction(None, "none")


# ----------------------------------------------------------------------------------------------------------
# M3CoT
# ----------------------------------------------------------------------------------------------------------
def _m3cot_official(text: str, choices: Sequence[str]) -> Extraction:
    if "[Answer]" in text:
        text = text.split("[Answer]")[-1].split("[Rationale]")[0].split("[Context]")[0]
    found = _PAREN_ANY.findall(text)
    if found:
        return Extraction(found[-1].upper(), "paren")
    lowered = text.lower()
    hits = [OPTION_LETTERS[i] for i, c in enumerate(choices) if c.lower() in lowered]
    if hits:
        return Extraction(hits[-1], "option-text")
    words = re.sub(r"[\n.,!?]", " ", text).split(" ")
    hits = [OPTION_LETTERS[i] for i in range(len(choices)) if OPTION_LETTERS[i] in words]
    if hits:
        return Extraction(hits[-1], "letter")
    hits = [OPTION_LETTERS[i] for i in range(len(choices)) if OPTION_LETTERS[i].lower() in words]
    if hits:
        return Extraction(hits[-1], "lower-letter")
    return Extraction(None, "none")


def _m3cot_robust(text: str, choices: Sequence[str]) -> Extraction:
    text = strip_eos(text)
    if "[Answer]" in text:
        text = text.split("[Answer]")[-1].split("[Rationale]")[0].split("[Context]")[0]
    n = len(choices)
    found = [m for m in _PAREN_UPPER.findall(text) if _valid(m, n)]
    if found:
        return Extraction(found[-1], "paren")
    phrases = [m.group(1).upper() for m in _ANSWER_PHRASE.finditer(text) if _valid(m.group(1).upper(), n)]
    if phrases:
        return Extraction(phrases[-1], "answer-phrase")
    letter = _leading_letter(text)
    if letter is not None and _valid(letter, n):
        return Extraction(letter, "leading-letter")
    lowered = text.lower()
    best: tuple[int, int, str] | None = None  # (end position, length, letter): latest end, then longest
    for i, choice in enumerate(choices):
        needle = choice.strip().lower()
        if not needle:
            continue
        start = lowered.rfind(needle)
        if start >= 0:
            key = (start + len(needle), len(needle), OPTION_LETTERS[i])
            if best is None or key[:2] > best[:2]:
                best = key
    if best is not None:
        return Extraction(best[2], "option-text")
    words = re.sub(r"[\n.,!?:;()\"']", " ", text).split()
    hits = [w for w in words if len(w) == 1 and _valid(w, n)]
    if hits:
        return Extraction(hits[-1], "letter")
    return Extraction(None, "none")


def extract_m3cot(text: str, choices: Sequence[str], *,
                  mode: ExtractionMode | str = ExtractionMode.OFFICIAL) -> Extraction:
    """Read the answer letter of an M3CoT output (the model's last reply).

    In official mode a ``(X)`` beyond the options is still the prediction (scored wrong, as released);
    in robust mode only letters naming an option count.
    """
    mode = ExtractionMode(mode)
    return _m3cot_official(text, choices) if mode is ExtractionMode.OFFICIAL else _m3cot_robust(text, choices)


# ----------------------------------------------------------------------------------------------------------
# Unparseable outputs
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resolved:
    """The final prediction of one item after the failure policy.

    Attributes:
        index: predicted 0-based option index, or None (unparseable, policy ``wrong``).
        parsed: whether the extraction rule found an answer; guessed: whether ``index`` is a random guess.
    """

    index: int | None
    parsed: bool
    guessed: bool


def resolve(extraction: Extraction, num_choices: int, policy: FailurePolicy | str, rng: random.Random) -> Resolved:
    """Apply the unparseable-output policy.

    A parsed letter beyond the options (official M3CoT mode only) keeps its index (never equal to a valid
    gold index, so it scores wrong) and is *not* guessed — as in the released code. With policy
    ``random`` an unparseable output becomes ``rng.randrange(num_choices)``: the official ScienceQA
    runner's ``random.choice(range(len(choices)))`` draws the same value from the same generator state.
    """
    policy = FailurePolicy(policy)
    if extraction.letter is not None:
        return Resolved(extraction.index(), True, False)
    if policy is FailurePolicy.RANDOM:
        return Resolved(rng.choice(range(num_choices)), False, True)
    return Resolved(None, False, False)
