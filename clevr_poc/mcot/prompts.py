"""Prompt builders: ScienceQA QCM→A / QCM→AE / QCM→ALE and the M3CoT zero-shot strategies.

ScienceQA (card §Method, fig. 5; layout as in the official ``models/base_prompt.py``)::

    Question: <question>
    Context: <hint + caption, or "N/A">
    Options: (A) <choice> (B) <choice> ...
    Answer: The answer is <X>. BECAUSE: <lecture> <solution>

Demonstrations come from the train split and are separated by a blank line; the test item ends with
``Answer:`` so the model writes the rest. Newlines inside lectures / solutions are escaped as ``\\n``
(card app. B.1). Output formats: ``QCM-A`` (answer only), ``QCM-AE`` (answer + explanation, i.e. the
``solution`` field), ``QCM-ALE`` (answer + lecture + explanation; the paper's best).
Note: the official code's ``AE`` output prints the *lecture* and ``AL`` the *solution* (swapped
relative to the paper's naming); this module follows the paper (E = explanation = ``solution``).

M3CoT (paper §5.1; prompt texts as in the released ``experiment/zero-shot`` files)::

    [Context]          <- only when the record has a context
    <context>

    [Question]
    <question>
    [Choices]
    (A) <choice>
    (B) <choice>

Strategies: ``direct`` (that prompt alone); ``cot`` (+ "Let's think step-by-step!", Kojima et al. 2022,
then an answer-selection turn); ``desp-cot`` (describe the image first, Wu et al. 2023b, then answer);
``ccot`` (generate a scene graph first, Mitra et al. 2023, then answer from it). Multi-turn strategies are
a sequence of user turns; the model's reply to each is appended before the next.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping, Sequence

from clevr_poc.errors import FormatError
from clevr_poc.mcot.mcot_data import OPTION_LETTERS, M3CoTRecord, ScienceQAProblem

# ----------------------------------------------------------------------------------------------------------
# ScienceQA
# ----------------------------------------------------------------------------------------------------------
#: Supported ScienceQA prompt formats: input QCM (question, context, options) -> output.
SCIENCEQA_FORMATS: tuple[str, ...] = ("QCM-A", "QCM-AE", "QCM-ALE")
#: Generation settings of the paper's GPT-3 runs (card Hyperparameters): greedy, stop at a newline,
#: at most 512 new tokens.
SCIENCEQA_STOP: tuple[str, ...] = ("\n",)
SCIENCEQA_MAX_TOKENS = 512
#: Demonstrations of the paper's final model (card §5.2) and its seed (trial 1).
SCIENCEQA_DEFAULT_SHOTS = 2
SCIENCEQA_DEFAULT_SEED = 3


def normalize_scienceqa_format(name: str) -> str:
    """Canonical format name: accepts ``QCM-ALE``, ``QCM→ALE``, ``qcm_ale``, ``ALE``; FormatError otherwise."""
    text = name.strip().upper().replace("→", "-").replace("->", "-").replace("_", "-")
    if "-" not in text:
        text = f"QCM-{text}"
    if text not in SCIENCEQA_FORMATS:
        raise FormatError(f"unknown ScienceQA prompt format; known: {list(SCIENCEQA_FORMATS)}", field="prompt",
                          value=name)
    return text


def scienceqa_context(problem: ScienceQAProblem, *, use_caption: bool = False) -> str:
    """Context text: hint and (with ``use_caption``) the image caption joined by a space, or "N/A"."""
    context = " ".join([problem.hint, problem.caption if use_caption else ""]).strip()
    return context or "N/A"


def scienceqa_options(problem: ScienceQAProblem) -> str:
    """``"(A) x (B) y ..."``."""
    return " ".join(f"({OPTION_LETTERS[i]}) {c}" for i, c in enumerate(problem.choices))


def format_scienceqa_example(problem: ScienceQAProblem, prompt_format: str = "QCM-ALE", *, with_answer: bool,
                             use_caption: bool = False) -> str:
    """One item of a ScienceQA prompt: Question / Context / Options, then ``Answer:`` (test item) or the
    gold answer in the output format (demonstration)."""
    prompt_format = normalize_scienceqa_format(prompt_format)
    lines = [f"Question: {problem.question}",
             f"Context: {scienceqa_context(problem, use_caption=use_caption)}",
             f"Options: {scienceqa_options(problem)}"]
    if not with_answer:
        lines.append("Answer:")
    else:
        lecture = problem.lecture.replace("\n", "\\n")
        solution = problem.solution.replace("\n", "\\n")
        answer = f"Answer: The answer is {problem.answer_letter}."
        if prompt_format == "QCM-AE":
            answer += f" BECAUSE: {solution}"
        elif prompt_format == "QCM-ALE":
            answer += f" BECAUSE: {lecture} {solution}"
        lines.append(answer)
    text = "\n".join(lines).replace("  ", " ").strip()
    if text.endswith("BECAUSE:"):  # a demonstration without lecture / solution (official behaviour)
        text = text[: -len("BECAUSE:")].strip()
    return text


def build_scienceqa_prompt(problems: Mapping[str, ScienceQAProblem] | object, shot_ids: Sequence[str], test_id: str,
                           prompt_format: str = "QCM-ALE", *, use_caption: bool = False) -> str:
    """The full prompt: ``len(shot_ids)`` demonstrations then the test item, separated by blank lines.

    ``problems`` is a mapping ``{qid: ScienceQAProblem}`` or a :class:`~clevr_poc.mcot.mcot_data.ScienceQADataset`.
    """
    examples = [format_scienceqa_example(problems[qid], prompt_format, with_answer=True, use_caption=use_caption)
                for qid in shot_ids]
    examples.append(format_scienceqa_example(problems[test_id], prompt_format, with_answer=False,
                                             use_caption=use_caption))
    return "\n\n".join(examples)


def sample_demonstrations(train_ids: Sequence[str], n: int, rng: random.Random) -> list[str]:
    """``rng.sample(train_ids, n)``: the official draw (``random.seed(seed); random.sample(...)``) when
    ``rng = random.Random(seed)``; n in 0..32 as in the official runner."""
    if not 0 <= n <= 32:
        raise ValueError(f"number of demonstrations must be in 0..32, got {n}")
    if n > len(train_ids):
        raise FormatError("fewer training problems than demonstrations requested", field="shots",
                          value=f"{n} > {len(train_ids)}")
    return rng.sample(list(train_ids), n)


# ----------------------------------------------------------------------------------------------------------
# M3CoT
# ----------------------------------------------------------------------------------------------------------
#: Supported M3CoT strategies (paper §5.1, Table 1 rows).
M3COT_STRATEGIES: tuple[str, ...] = ("direct", "cot", "desp-cot", "ccot")
_STRATEGY_ALIASES = {"direct": "direct", "cot": "cot", "desp-cot": "desp-cot", "despcot": "desp-cot",
                     "dsp": "desp-cot", "desp": "desp-cot", "ccot": "ccot"}

COT_TRIGGER = "Let's think step-by-step!"
DESP_TRIGGER = "Describe the image information relevant to the question. Do not answer the choice question directly."
CCOT_TRIGGER = ("For the provided image and its associated question, generate a scene graph in JSON format that "
                "includes the following:\n1.Objects that are relevant to answering the question.\n2.Object "
                "attributes that are relevant to answering the question.\n3.Object relationships that are "
                "relevant to answering the question.\n\nScene Graph:")


def normalize_m3cot_strategy(name: str) -> str:
    """Canonical strategy name (``direct``, ``cot``, ``desp-cot``, ``ccot``); FormatError otherwise."""
    key = name.strip().lower().replace("_", "-")
    if key not in _STRATEGY_ALIASES:
        raise FormatError(f"unknown M3CoT strategy; known: {list(M3COT_STRATEGIES)}", field="prompt", value=name)
    return _STRATEGY_ALIASES[key]


def m3cot_base_prompt(record: M3CoTRecord) -> str:
    """``[Context]`` (if any), ``[Question]`` and ``[Choices]`` blocks, as in the released experiments."""
    parts = [f"[Context]\n{record.context}\n\n"] if record.context.strip() else []
    parts.append(f"[Question]\n{record.question}\n[Choices]\n")
    parts.append("\n".join(f"({OPTION_LETTERS[i]}) {c}" for i, c in enumerate(record.choices)))
    return "".join(parts)


def _letter_list(record: M3CoTRecord) -> str:
    return "[" + ",".join(f'"({OPTION_LETTERS[i]})"' for i in range(len(record.choices))) + "]"


@dataclass(frozen=True)
class PromptPlan:
    """The user turns of one conversation; the model answers each in turn, the last reply is scored.

    Attributes:
        strategy: the strategy name; ``turns``: user messages, in order (1 or 2).
    """

    strategy: str
    turns: tuple[str, ...]


def build_m3cot_plan(record: M3CoTRecord, strategy: str = "direct") -> PromptPlan:
    """User turns of one M3CoT strategy (see the module docstring); FormatError for an unknown strategy."""
    strategy = normalize_m3cot_strategy(strategy)
    base = m3cot_base_prompt(record)
    letters = _letter_list(record)
    if strategy == "direct":
        turns: tuple[str, ...] = (base,)
    elif strategy == "cot":
        turns = (f"{base}\n\n{COT_TRIGGER}", f"Please select the correct answer from the {letters} options.")
    elif strategy == "desp-cot":
        turns = (f"{base}\n\n{DESP_TRIGGER}", f"Then, provide your answer. Note, you must choose from {letters} options.")
    else:  # ccot
        turns = (f"{base}\n\n{CCOT_TRIGGER}",
                 "Use the image and scene graph as context and answer the following question:\n"
                 f"{base}\nAnswer with the option's letter from the given choices directly.")
    return PromptPlan(strategy=strategy, turns=turns)
