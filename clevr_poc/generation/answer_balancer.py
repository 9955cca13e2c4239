"""Answer balancing: over-represented answer sets rejected (paper Appendix B, Fig. 7)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Iterable

from clevr_poc import domain


class AnswerBalancer:
    """Rejects over-represented answer sets (paper Appendix B, Fig. 7: no answer set should dominate).

    Per query attribute it counts the answer sets kept so far. With ``n`` kept questions and ``k`` distinct
    answer sets seen, the *fair count* is ``n / (k + 1)`` (the ``+ 1`` stands for the sets not seen yet).
    A new question whose answer set has ``c > tolerance * fair`` kept questions is accepted with probability
    ``tolerance * fair / c``; sets never seen, and everything before ``warmup`` questions of the attribute,
    are always accepted. Deterministic given the ``random.Random`` passed in (one ``rng.random()`` call per
    probabilistic decision, none otherwise).

    Args:
        tolerance: how many times the fair count a set may reach before rejections start (>= 1).
        warmup: questions per attribute before balancing starts (>= 0).
    """

    def __init__(self, tolerance: float = 1.5, warmup: int = 10) -> None:
        if tolerance < 1:
            raise ValueError(f"tolerance must be >= 1, got {tolerance}")
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.tolerance = float(tolerance)
        self.warmup = int(warmup)
        self.counts: dict[str, Counter[frozenset[str]]] = {a: Counter() for a in domain.ATTRIBUTES}

    def acceptance_probability(self, attribute: str, answer: Iterable[str]) -> float:
        """Probability in (0, 1] of keeping a question with this answer set."""
        answer = frozenset(answer)
        counts = self.counts[attribute]
        n = sum(counts.values())
        have = counts.get(answer, 0)
        if n < self.warmup or have == 0:
            return 1.0
        allowed = self.tolerance * n / (len(counts) + 1)
        return 1.0 if have <= allowed else allowed / have

    def offer(self, attribute: str, answer: Iterable[str], rng: random.Random) -> bool:
        """Decide whether to keep the question; records the answer set when kept."""
        answer = frozenset(answer)
        p = self.acceptance_probability(attribute, answer)
        keep = p >= 1.0 or rng.random() < p
        if keep:
            self.record(attribute, answer)
        return keep

    def record(self, attribute: str, answer: Iterable[str]) -> None:
        """Count a kept question (e.g. when resuming from questions already written)."""
        if attribute not in self.counts:
            raise KeyError(f"unknown attribute {attribute!r}")
        self.counts[attribute][frozenset(answer)] += 1
