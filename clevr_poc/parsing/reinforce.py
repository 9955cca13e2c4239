"""REINFORCE fine-tuning of the question parser on (question, answer) pairs (paper §4.1.2, NS-VQA).

The parser samples a program for each question; the :class:`~clevr_poc.reasoning.Reasoner` answers it
on the example's environment and gold partial scene; the reward is the exact match (paper eq. 2) or
the Jaccard index (eq. 3) of that answer with the gold answer set. The policy gradient
``-(r - b) * log p(program | question)`` uses a moving-average baseline ``b`` (NS-VQA: decay 0.9).

The paper's REINFORCE drove program accuracy from 0.45-0.50 to 0-0.04 (Table 3). Likely causes, and
what this implementation does about each (``docs/parser.md`` has the experiment):

1. **Invalid samples.** Unconstrained sampling writes many programs that are not queries at all
   (reward 0 whatever the question); every such sample pushes probability mass around at random.
   Here sampling is constrained by the grammar (``constrained=True``): every sample is a valid query.
2. **One advantage for the whole batch.** NS-VQA's trainer gives every sample of a batch the same
   advantage, ``mean(batch reward) - baseline``: a batch that does worse than the baseline pushes
   *down* the correct programs in it too. Here each sample gets its own advantage ``r_i - b``
   (``advantage="batch"`` restores NS-VQA's behaviour for the ablation).
3. **Spurious programs.** Under partial observability many wrong programs give the right answer set
   (dropping a description of a reference object often changes nothing), so answer reward alone
   cannot hold the exact program in place; the policy drifts among equally rewarded programs. Here
   the supervised loss on the pretraining pairs stays in the objective (``supervised_weight``), which
   anchors the mapping the reward cannot see.
4. **Step size.** NS-VQA fine-tunes with a learning rate of 1e-5; a larger rate with the high
   variance of (2) moves the policy far within a few steps. Here the default is 1e-5 with gradient
   clipping; an entropy bonus (``entropy_weight``) keeps sampling from collapsing onto one program.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from clevr_poc.evaluation.metrics import exact_match, jaccard_index
from clevr_poc.parsing.equivalence import programs_equal
from clevr_poc.parsing.seq2seq import BiLSTMParser, decode
from clevr_poc.parsing.supervised_training import ParserPair, batches, make_batch, supervised_loss
from clevr_poc.reasoning import Reasoner
from clevr_poc.queries.sanitizer import sanitize_query
from clevr_poc.errors import ClevrPocError

__all__ = ["REWARDS", "ADVANTAGES", "ReinforceSettings", "ReinforceState", "reinforce"]

REWARDS = ("exact", "jaccard")
ADVANTAGES = ("sample", "batch")


@dataclass(frozen=True)
class ReinforceSettings:
    """REINFORCE hyper-parameters.

    Attributes:
        steps: total policy-gradient steps.
        batch_size: questions per step (NS-VQA: 64).
        reward: ``"exact"`` (eq. 2) or ``"jaccard"`` (eq. 3).
        baseline_decay: moving-average baseline ``b <- decay * b + (1 - decay) * mean reward`` (NS-VQA 0.9).
        advantage: ``"sample"`` (``r_i - b``, default) or ``"batch"`` (NS-VQA's ``mean(r) - b`` for all).
        entropy_weight: weight of the entropy bonus (sum over choice points, mean over the batch).
        supervised_weight: weight of the supervised loss on the pretraining pairs (0 = pure REINFORCE).
        constrained: grammar-constrained sampling (False: the unconstrained ablation).
        temperature: sampling temperature.
        baseline_init: ``"first"`` (default): the baseline starts at the first batch's mean reward;
            ``"zero"``: at 0 as in NS-VQA (then the first ~20 steps reward every sample, wrong ones too).
    """

    steps: int = 200
    batch_size: int = 64
    reward: str = "exact"
    baseline_decay: float = 0.9
    advantage: str = "sample"
    entropy_weight: float = 0.01
    supervised_weight: float = 1.0
    constrained: bool = True
    temperature: float = 1.0
    baseline_init: str = "first"

    def __post_init__(self) -> None:
        if self.baseline_init not in ("first", "zero"):
            raise ValueError(f"baseline_init must be 'first' or 'zero', got {self.baseline_init!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}, got {self.advantage!r}")
        if not 0.0 <= self.baseline_decay < 1.0:
            raise ValueError(f"baseline_decay must be in [0, 1), got {self.baseline_decay}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")


@dataclass
class ReinforceState:
    """Progress of a REINFORCE run (saved in checkpoints).

    Attributes:
        step: steps done.
        baseline: the moving-average baseline.
        history: per logged step ``{"step", "reward", "valid", "sample_pa", "spurious", "baseline"}``:
            mean reward, share of valid sampled programs, share of samples equal to the gold program,
            share of the *wrong* samples that still got the full reward (spurious programs), and the
            baseline. The gold programs serve monitoring only: the REINFORCE loss never sees them.
    """

    step: int = 0
    baseline: float = 0.0
    history: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"step": self.step, "baseline": self.baseline, "history": self.history}

    @classmethod
    def from_json(cls, data: dict) -> "ReinforceState":
        return cls(int(data["step"]), float(data["baseline"]), list(data.get("history", [])))


def reinforce(parser: BiLSTMParser, rl_pairs: Sequence[ParserPair], supervised_pairs: Sequence[ParserPair],
              settings: ReinforceSettings, *, optimizer: torch.optim.Optimizer, state: ReinforceState | None = None,
              seed: int = 0, reasoner: Reasoner | None = None,
              on_step: Callable[[ReinforceState], None] | None = None, progress: bool = True,
              log_every: int = 10) -> ReinforceState:
    """REINFORCE on ``rl_pairs`` (their questions and answers; programs only for monitoring).

    Args:
        parser: the (pretrained) parser, trained in place.
        rl_pairs: (question, answer) pairs with their examples (environment, partial scene).
        supervised_pairs: the pretraining pairs, for the supervised term (may be empty when
            ``settings.supervised_weight == 0``).
        settings: :class:`ReinforceSettings`.
        optimizer: optimizer over ``parser.model.parameters()`` (NS-VQA: Adam, lr 1e-5).
        state: a resumed :class:`ReinforceState` (None: start; the baseline starts at 0 as in NS-VQA).
        seed: sampling and batch-order seed.
        reasoner: the reasoner computing rewards (default: a new compiled-mode one).
        on_step: called after every step (checkpoints).
        progress: tqdm bar.
        log_every: steps between history entries.

    Returns:
        The final :class:`ReinforceState`.
    """
    from tqdm import tqdm

    if settings.supervised_weight > 0 and not supervised_pairs:
        raise ValueError("supervised_weight > 0 needs supervised pairs")
    state = state or ReinforceState()
    reasoner = reasoner or Reasoner()
    score = exact_match if settings.reward == "exact" else jaccard_index
    rl_stream = batches(rl_pairs, settings.batch_size, seed + 1, state.step)
    sup_stream = batches(supervised_pairs, settings.batch_size, seed + 2, state.step) if supervised_pairs else None
    generator = torch.Generator().manual_seed(seed * 7919 + state.step)
    cache: dict[tuple[int, str], frozenset[str] | None] = {}
    index = {id(p): i for i, p in enumerate(rl_pairs)}
    window: list[tuple[float, float, float]] = []
    parser.model.train()
    with tqdm(total=settings.steps, initial=state.step, desc="reinforce", disable=not progress, leave=False) as bar:
        while state.step < settings.steps:
            pairs = next(rl_stream)
            words, lengths = parser.encode([p.question for p in pairs])
            decoded = decode(parser.model, words, lengths, sample=True, constrained=settings.constrained,
                             temperature=settings.temperature, generator=generator)
            rewards, valid, correct, spurious = [], 0, 0, 0
            for pair, text in zip(pairs, decoded.texts()):
                answer, equal = None, False
                if text is not None:
                    key = (index[id(pair)], text)
                    if key not in cache:
                        cache[key] = _answer(reasoner, pair, text)
                    answer = cache[key]
                    valid += answer is not None
                    equal = programs_equal(text, pair.query)
                    correct += equal
                rewards.append(score(pair.answer, answer))
                spurious += (not equal) and rewards[-1] >= 1.0
            reward = torch.tensor(rewards)
            mean_reward = float(reward.mean())
            if state.step == 0 and settings.baseline_init == "first":
                state.baseline = mean_reward
            state.baseline = settings.baseline_decay * state.baseline + (1 - settings.baseline_decay) * mean_reward
            if settings.advantage == "sample":
                advantage = reward - state.baseline
            else:
                advantage = torch.full_like(reward, mean_reward - state.baseline)
            loss = -(advantage * decoded.log_probs).mean() - settings.entropy_weight * decoded.entropy.mean()
            if settings.supervised_weight > 0:
                loss = loss + settings.supervised_weight * supervised_loss(parser, make_batch(parser, next(sup_stream)))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parser.model.parameters(), 5.0)
            optimizer.step()
            state.step += 1
            window.append((mean_reward, valid / len(pairs), correct / len(pairs), spurious, len(pairs) - correct))
            if state.step % log_every == 0 or state.step == settings.steps:
                r, v, c = (sum(x[k] for x in window) / len(window) for k in range(3))
                wrong = sum(x[4] for x in window)
                state.history.append({"step": state.step, "reward": round(r, 4), "valid": round(v, 4),
                                      "sample_pa": round(c, 4),
                                      "spurious": round(sum(x[3] for x in window) / wrong, 4) if wrong else None,
                                      "baseline": round(state.baseline, 4)})
                window = []
            bar.update(1)
            bar.set_postfix(reward=f"{mean_reward:.3f}", baseline=f"{state.baseline:.3f}")
            if len(cache) > 200_000:
                cache.clear()
            if on_step is not None:
                on_step(state)
    return state


def _answer(reasoner: Reasoner, pair: ParserPair, text: str) -> frozenset[str] | None:
    try:
        query = sanitize_query(text)
        return reasoner.answer(pair.example.environment, pair.example.partial_scene, query).values
    except ClevrPocError:
        return None
