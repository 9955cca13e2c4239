"""How much of a question a trained parser can read: its length and the words outside its vocabulary.

A BiLSTM parser (:class:`~clevr_poc.parsing.seq2seq.BiLSTMParser`) turns every question into a query, even
one in French or 20,000 repeated words: unseen words become ``<unk>`` and questions are cut to
``max_question_words`` tokens. :func:`check_question_words` says what it could not read and refuses a
question it mostly cannot (``python -m clevr_poc parse``, the explorer).

Bounds (sources):

- :data:`MAX_QUESTION_CHARS` = 2,000 characters: CLEVR-POC's templates give questions under 300 characters
  (the longest of our generated datasets: 231); the LLM prompts allow about as much.
- :data:`MAX_UNKNOWN_SHARE` = 0.5: a question of which more than half the words are unknown is refused
  (a CLEVR-POC question has at most one or two words a parser trained on the templates has not seen).
"""

from __future__ import annotations

from dataclasses import dataclass

from clevr_poc.errors import FormatError
from clevr_poc.parsing.vocabulary import QuestionVocabulary, question_tokens

MAX_QUESTION_CHARS = 2_000
MAX_UNKNOWN_SHARE = 0.5
_PUNCTUATION = frozenset("?;,.")


class UnreadableQuestionError(FormatError):
    """A question too long for the parser, or mostly made of words it does not know."""


@dataclass(frozen=True)
class QuestionWords:
    """What a parser reads of one question.

    Attributes:
        words: words of the question (punctuation not counted), >= 0.
        unknown: the words outside the parser's vocabulary, in order, repeats kept.
        cut: words past the parser's ``max_question_words`` (not read at all), >= 0.
    """

    words: int
    unknown: tuple[str, ...]
    cut: int = 0

    def describe(self) -> str:
        """One line, e.g. ``the parser did not know 2 of 11 words ('quelle', 'est')`` ("" when it knew all)."""
        parts = []
        if self.unknown:
            shown = ", ".join(repr(w) for w in dict.fromkeys(self.unknown).keys())
            shown = shown if len(shown) <= 120 else shown[:117] + "..."
            parts.append(f"the parser did not know {len(self.unknown)} of {self.words} words ({shown})")
        if self.cut:
            parts.append(f"it read only the first {self.words - self.cut} words")
        return "; ".join(parts)


def check_question_words(vocabulary: QuestionVocabulary, question: str, *,
                         max_words: int | None = None) -> QuestionWords:
    """Count the words of ``question`` the parser with ``vocabulary`` (reading at most ``max_words``
    tokens) does not know.

    Raises:
        FormatError: ``question`` is not a string, or is empty.
        UnreadableQuestionError: over :data:`MAX_QUESTION_CHARS` characters, or more than
            :data:`MAX_UNKNOWN_SHARE` of its words unknown (the message counts them and names a few).
    """
    if not isinstance(question, str):
        raise FormatError("a question must be a string", field="question", value=type(question).__name__)
    if not question.strip():
        raise FormatError("empty question", field="question")
    if len(question) > MAX_QUESTION_CHARS:
        raise UnreadableQuestionError(f"{len(question):,} characters is over the {MAX_QUESTION_CHARS:,} a "
                                      "question may have", field="question")
    tokens = question_tokens(question)
    words = [w for w in tokens if w not in _PUNCTUATION]
    unknown = tuple(vocabulary.unknown_words(" ".join(words)))
    cut = max(0, len(tokens) - max_words) if max_words is not None else 0
    found = QuestionWords(len(words), unknown, min(cut, len(words)))
    if not words or len(unknown) > MAX_UNKNOWN_SHARE * len(words):
        raise UnreadableQuestionError(f"{found.describe() or 'no words'}: more than "
                                      f"{MAX_UNKNOWN_SHARE:.0%} unknown, not a question this parser can read "
                                      "(it was trained on CLEVR-POC's English templates)", field="question")
    return found
