"""The BiLSTM seq2seq question parser of NS-VQA (Yi et al. 2018), writing ASP queries (paper §4.1.2).

Architecture (NS-VQA's ``reason/models``; sizes from its training options):

- **encoder**: word vectors (300-d, learned) -> 2-layer bidirectional LSTM, 256 units per direction;
  outputs ``(batch, words, 512)``;
- **decoder**: token vectors (300-d) -> 2-layer LSTM initialised with the encoder's final states (both
  directions concatenated; projected by ``tanh(W h)`` when the decoder is not 512 wide), dot-product
  attention over the encoder outputs (``tanh(W [context; output])``, as NS-VQA's ``Attention``), a
  linear layer to the :data:`~.vocabulary.QUERY_TOKENS` logits. NS-VQA's decoder has 512 units; ours
  has 256 by default (:attr:`ParserConfig.decoder_hidden_size`), 2.1x fewer operations per step;
- **copy distribution** (not in NS-VQA; :attr:`ParserConfig.copy`): the attention weights of question
  words that name a query constant are added to that constant's probability (pointer-generator, See et
  al. 2017), see :func:`copy_targets`;
- **choice points and constrained decoding**: the grammar automaton (:mod:`clevr_poc.parsing.grammar`)
  writes every token it forces (``missing ( Q ) :-``, parentheses, commas, the only variable allowed);
  the network runs only where the grammar allows more than one token (~44 of the ~90 tokens of a
  CLEVR-POC query), and there the logits of tokens the grammar does not allow are set to -1e9, in
  greedy decoding, in sampling (REINFORCE) and in the supervised loss alike. Every output is a query
  the sanitizer accepts. ``constrained=False`` (an ablation) lets a choice point pick any token; a
  sequence that picks one outside the grammar is invalid.

:class:`BiLSTMParser` wraps the network with its question vocabulary and configuration:
``from_pretrained(path)`` / ``save_pretrained(path)`` (``config.json``, ``vocab.json``,
``weights.pt`` -- a plain state dict, fp16 by default, loaded with ``torch.load(weights_only=True)``),
``parse(question) -> str`` and ``parse_batch(questions) -> list[str]``: query texts in the official
form (:func:`~clevr_poc.queries.official_form.to_official_form`: variables X, Y / Y1, Y2, Y3, every
pairwise inequality; the decoder itself writes X, Y, Z, W in order of first use).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from clevr_poc import domain
from clevr_poc._io import atomic_open, atomic_write_json, read_json
from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.parsing.query_parser import ParseResult
from clevr_poc.parsing.grammar import MAX_QUERY_TOKENS, GrammarState, QueryGrammar, allowed_mask_sequence
from clevr_poc.queries.official_form import to_official_form
from clevr_poc.parsing.vocabulary import (
    PAD, QUERY_INDEX, QUERY_TOKENS, START, QuestionVocabulary, tokens_to_query,
)
from clevr_poc.queries.sanitizer import sanitize_query

__all__ = ["ParserConfig", "Seq2Seq", "Decoded", "BiLSTMParser", "choice_targets", "decode", "encode_questions",
           "MASKED_LOGIT"]

#: Logit given to tokens the grammar forbids (exp underflows to exactly 0 in float32).
MASKED_LOGIT = -1e9
FORMAT_VERSION = 1
_PAD_ID = QUERY_INDEX[PAD]
_START_ID = QUERY_INDEX[START]
_END_ID = QUERY_INDEX["."]
#: Query tokens a question word can name (copy targets).
_COPYABLE = frozenset(domain.ATTRIBUTES) | frozenset(domain.ATTRIBUTE_OF_VALUE) | frozenset(domain.RELATIONS)


@dataclass(frozen=True)
class ParserConfig:
    """Network sizes (defaults: NS-VQA's ``train_options.py``).

    Attributes:
        word_vec_dim: word/token vector size (300).
        hidden_size: encoder LSTM units per direction (256).
        decoder_hidden_size: decoder LSTM units. NS-VQA uses twice ``hidden_size`` (512, both encoder
            directions concatenated); 256 (default) costs 2.1x fewer operations per decoding step on
            CPU at no loss of accuracy here (docs/parser.md); 512 reproduces NS-VQA exactly.
        n_layers: LSTM layers of encoder and decoder (2).
        dropout: dropout on word/token vectors, between LSTM layers and before the output layer
            (NS-VQA: 0).
        max_question_words: questions are cut to this many tokens (NS-VQA ``encoder_max_len`` 50).
        copy: add a copy distribution (pointer-generator, See et al. 2017): the attention weights of
            question words that name a query constant (``red``, ``cube``, ``left``, ``color``, ...) are
            added to that constant's probability, mixed with the generated distribution by a learned
            gate. Not in NS-VQA (``copy=False`` is NS-VQA's decoder); on by default: it makes the values
            right from the first epochs (docs/parser.md).
    """

    word_vec_dim: int = 300
    hidden_size: int = 256
    decoder_hidden_size: int = 256
    n_layers: int = 2
    dropout: float = 0.0
    max_question_words: int = 80
    copy: bool = True

    def to_json(self) -> dict:
        return {**asdict(self), "output_tokens": list(QUERY_TOKENS), "format_version": FORMAT_VERSION}

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "ParserConfig":
        if not isinstance(data, dict):
            raise FormatError("expected a JSON object", source=source)
        if data.get("format_version") != FORMAT_VERSION:
            raise FormatError(f"unsupported parser format version (this code reads {FORMAT_VERSION})",
                              source=source, field="format_version", value=data.get("format_version"))
        if data.get("output_tokens") != list(QUERY_TOKENS):
            raise FormatError("the checkpoint's output tokens differ from this code's query tokens",
                              source=source, field="output_tokens")
        fields = {k: data[k] for k in ("word_vec_dim", "hidden_size", "decoder_hidden_size", "n_layers", "dropout",
                                            "max_question_words", "copy")
                  if k in data}
        for key, value in fields.items():
            if key == "copy":
                if not isinstance(value, bool):
                    raise FormatError("must be true or false", source=source, field=key, value=value)
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise FormatError("must be a non-negative number", source=source, field=key, value=value)
        return cls(**fields)


class Seq2Seq(nn.Module):
    """Encoder (BiLSTM), attention decoder (LSTM) and output layer; see the module docstring.

    Args:
        input_vocab_size: question words (``len(QuestionVocabulary)``).
        config: :class:`ParserConfig`.
    """

    def __init__(self, input_vocab_size: int, config: ParserConfig,
                 word_tokens: Sequence[Sequence[int]] | None = None) -> None:
        super().__init__()
        self.config = config
        h, d = config.hidden_size, config.decoder_hidden_size
        dropout = config.dropout if config.n_layers > 1 else 0.0
        self.input_embedding = nn.Embedding(input_vocab_size, config.word_vec_dim, padding_idx=0)
        self.encoder = nn.LSTM(config.word_vec_dim, h, config.n_layers, batch_first=True, bidirectional=True,
                               dropout=dropout)
        # encoder final states (both directions, 2h) -> decoder initial states (d); identity when d == 2h
        self.bridge = None if d == 2 * h else nn.Linear(2 * h, d)
        self.attention_key = None if d == 2 * h else nn.Linear(2 * h, d, bias=False)
        self.output_embedding = nn.Embedding(len(QUERY_TOKENS), config.word_vec_dim, padding_idx=_PAD_ID)
        self.decoder = nn.LSTM(config.word_vec_dim, d, config.n_layers, batch_first=True, dropout=dropout)
        self.attention_out = nn.Linear(2 * d, d)
        self.out = nn.Linear(d, len(QUERY_TOKENS))
        self.drop = nn.Dropout(config.dropout)
        if config.copy:
            if word_tokens is None or len(word_tokens) != input_vocab_size:
                raise ValueError("a copy model needs word_tokens: the query tokens each question word names")
            table = torch.zeros(input_vocab_size, len(QUERY_TOKENS))
            for word, tokens in enumerate(word_tokens):
                for token in tokens:
                    table[word, token] = 1.0
            self.register_buffer("word_tokens", table, persistent=False)
            self.copy_gate = nn.Linear(2 * d + config.word_vec_dim, 1)

    # ------------------------------------------------------------------ encoder
    def encode(self, words: torch.Tensor, lengths: torch.Tensor):
        """Encode padded questions.

        Args:
            words: ``(batch, words)`` int64 word indices, 0-padded.
            lengths: ``(batch,)`` int64 lengths (>= 1).

        Returns:
            ``(memory (batch, words, d), source_mask (batch, words) bool, (h0, c0))``: the attention
            memory (encoder outputs, projected to the decoder size d) and the decoder's initial states
            ``(n_layers, batch, d)``.
        """
        embedded = self.drop(self.input_embedding(words))
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, (h, c) = self.encoder(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=words.size(1))
        source_mask = words != 0

        def bridge(state: torch.Tensor) -> torch.Tensor:  # (2L, B, h) -> (L, B, 2h) -> (L, B, d)
            state = torch.cat([state[0::2], state[1::2]], dim=2)
            return state if self.bridge is None else torch.tanh(self.bridge(state))

        memory = outputs if self.attention_key is None else self.attention_key(outputs)
        if self.config.copy:  # the source words travel with the mask: (mask, words)
            source_mask = (source_mask, words)
        return memory, source_mask, (bridge(h).contiguous(), bridge(c).contiguous())

    # ------------------------------------------------------------------ decoder
    def decode_steps(self, inputs: torch.Tensor, state, memory: torch.Tensor, source_mask: torch.Tensor):
        """Run the decoder over ``inputs`` (``(batch, steps)`` token indices) from ``state``.

        Returns:
            ``(logits (batch, steps, vocab), new state)``.
        """
        source_words = None
        if self.config.copy:
            source_mask, source_words = source_mask
        embedded = self.drop(self.output_embedding(inputs))
        output, state = self.decoder(embedded, state)
        scores = torch.bmm(output, memory.transpose(1, 2))                    # (B, T, S)
        scores = scores.masked_fill(~source_mask.unsqueeze(1), MASKED_LOGIT)
        weights = torch.softmax(scores, dim=2)
        context = torch.bmm(weights, memory)                                   # (B, T, d)
        combined = torch.tanh(self.attention_out(torch.cat([context, output], dim=2)))
        logits = self.out(self.drop(combined))
        if source_words is None:
            return logits, state
        # pointer-generator: p = g * softmax(logits) + (1 - g) * attention mass of words naming each token
        gate = torch.sigmoid(self.copy_gate(torch.cat([context, output, embedded], dim=2)))   # (B, T, 1)
        copied = torch.bmm(weights, self.word_tokens[source_words])                             # (B, T, V)
        probs = gate * torch.softmax(logits, dim=2) + (1 - gate) * copied
        return torch.log(probs + 1e-12), state

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits over the *choice* tokens (see :func:`choice_targets`).

        Args:
            words, lengths: as :meth:`encode`.
            targets: ``(batch, steps)`` gold choice-token indices (0-padded), without the start symbol.

        Returns:
            ``(batch, steps, vocab)`` float logits; step t predicts ``targets[:, t]``.
        """
        memory, source_mask, state = self.encode(words, lengths)
        start = torch.full((targets.size(0), 1), _START_ID, dtype=targets.dtype, device=targets.device)
        inputs = torch.cat([start, targets[:, :-1]], dim=1)
        logits, _ = self.decode_steps(inputs, state, memory, source_mask)
        return logits


def choice_targets(tokens: Sequence[int]) -> tuple[list[int], torch.Tensor]:
    """The choice points of a gold token sequence: ``(choice tokens, masks (choices, vocab) bool)``.

    A choice point is a step where the grammar allows more than one token; the decoder runs only
    there (forced tokens are written by the automaton).

    Raises:
        GrammarError: the sequence is outside the grammar.
    """
    rows = allowed_mask_sequence(tokens)
    choice = rows.sum(dim=1) > 1
    index = torch.nonzero(choice).flatten()
    return [int(tokens[i]) for i in index], rows[index]


@dataclass
class Decoded:
    """Output of :func:`decode` for a batch.

    Attributes:
        tokens: per sequence, every token index written (forced ones included).
        valid: per sequence, False when unconstrained decoding chose a token outside the grammar (the
            sequence stops there and is not a query); always True when constrained.
        log_probs: ``(batch,)`` sum over choice points of the chosen tokens' log-probabilities (with
            grad when grad is enabled).
        entropy: ``(batch,)`` sum over choice points of the (masked) distribution's entropy.
        choices: ``(batch,)`` number of choice points of each sequence.
    """

    tokens: list[list[int]]
    valid: list[bool]
    log_probs: torch.Tensor
    entropy: torch.Tensor
    choices: torch.Tensor

    def texts(self) -> list[str | None]:
        """The query texts (not sanitized; None for invalid sequences)."""
        return [tokens_to_query([QUERY_TOKENS[t] for t in seq]) if ok else None
                for seq, ok in zip(self.tokens, self.valid)]


def _write_forced(state: GrammarState) -> None:
    """Advance ``state`` over the tokens the grammar forces (exactly one allowed)."""
    while not state.done:
        allowed = state.allowed()
        if len(allowed) != 1:
            return
        state.advance(allowed[0])


def decode(model: Seq2Seq, words: torch.Tensor, lengths: torch.Tensor, *, sample: bool = False,
           constrained: bool = True, temperature: float = 1.0, generator: torch.Generator | None = None,
           max_choices: int = MAX_QUERY_TOKENS) -> Decoded:
    """Greedy (``sample=False``) or sampled decoding; the network runs only at choice points.

    Tokens the grammar forces are written by the automaton; at a choice point the logits of tokens the
    grammar does not allow are masked (``constrained=True``, default). With ``constrained=False`` (an
    ablation: the paper's unconstrained sampling) every token is allowed at a choice point and a
    sequence that picks one outside the grammar ends there, invalid.

    Gradients flow through ``log_probs`` and ``entropy`` when grad is enabled (REINFORCE).

    Args:
        model: the network.
        words, lengths: padded questions, see :meth:`Seq2Seq.encode`.
        sample: draw each choice from the (masked) softmax instead of taking the argmax.
        constrained: mask tokens the grammar does not allow.
        temperature: softmax temperature for sampling (> 0).
        generator: torch random generator for sampling (reproducibility).
        max_choices: hard limit on choice points (the grammar ends every query before it).
    """
    batch = words.size(0)
    memory, source_mask, state = model.encode(words, lengths)
    states = [GrammarState() for _ in range(batch)]
    for s in states:
        _write_forced(s)
    valid = [True] * batch
    finished = torch.tensor([s.done for s in states], dtype=torch.bool)
    current = torch.full((batch, 1), _START_ID, dtype=torch.long)
    log_probs = torch.zeros(batch)
    entropy = torch.zeros(batch)
    choices = torch.zeros(batch, dtype=torch.long)
    vocab = len(QUERY_TOKENS)
    free = torch.ones(vocab, dtype=torch.bool)
    free[_PAD_ID] = free[_START_ID] = False
    for _ in range(max_choices):
        if bool(finished.all()):
            break
        logits, state = model.decode_steps(current, state, memory, source_mask)
        logits = logits[:, 0, :].float()
        if constrained:
            mask = QueryGrammar.masks(states)
        else:
            mask = free.expand(batch, vocab).clone()
        mask[finished] = False
        mask[finished, _PAD_ID] = True
        logits = logits.masked_fill(~mask, MASKED_LOGIT)
        if sample and temperature != 1.0:
            logits = logits / temperature
        step_log_probs = torch.log_softmax(logits, dim=1)
        if sample:
            choice = torch.multinomial(step_log_probs.detach().exp(), 1, generator=generator).squeeze(1)
        else:
            choice = step_log_probs.argmax(dim=1)
        active = ~finished
        chosen = step_log_probs.gather(1, choice.unsqueeze(1)).squeeze(1)
        step_entropy = -(step_log_probs.exp() * step_log_probs).sum(dim=1)
        zero = torch.zeros_like(chosen)
        log_probs = log_probs + torch.where(active, chosen, zero)
        entropy = entropy + torch.where(active, step_entropy, zero)
        choices = choices + active.long()
        for row in torch.nonzero(active).flatten().tolist():
            token = int(choice[row])
            st = states[row]
            if not constrained and token not in st.allowed():
                st.tokens.append(token)
                valid[row] = False
                finished[row] = True
                continue
            st.advance(token)
            _write_forced(st)
            if st.done:
                finished[row] = True
        current = torch.where(finished, torch.full_like(choice, _PAD_ID), choice).unsqueeze(1)
    for row, st in enumerate(states):
        if not st.done:
            valid[row] = False
    return Decoded([s.tokens for s in states], valid, log_probs, entropy, choices)


def copy_targets(vocabulary: QuestionVocabulary) -> list[tuple[int, ...]]:
    """For each question word, the query tokens it names: a value names itself and its attribute
    (``red`` -> ``red``, ``color``), an attribute word the attribute and its ``same_`` predicate
    (``material`` -> ``material``, ``same_material``), a relation word its predicate (``left`` ->
    ``left``); other words name nothing.

    At a choice point the grammar keeps only one kind (an attribute, a value, a predicate), so pointing at
    ``red`` supports ``color`` where an attribute is due and ``red`` where the value is.

    >>> from clevr_poc.parsing.vocabulary import QuestionVocabulary
    >>> copy_targets(QuestionVocabulary(("<pad>", "<unk>", "red", "the", "left")))[2:] == [
    ...     (QUERY_INDEX["red"], QUERY_INDEX["color"]), (), (QUERY_INDEX["left"],)]
    True
    """
    out: list[tuple[int, ...]] = []
    for word in vocabulary.words:
        if word in domain.ATTRIBUTE_OF_VALUE:
            out.append((QUERY_INDEX[word], QUERY_INDEX[domain.ATTRIBUTE_OF_VALUE[word]]))
        elif word in domain.ATTRIBUTES:
            out.append((QUERY_INDEX[word], QUERY_INDEX[f"same_{word}"]))
        elif word in _COPYABLE:
            out.append((QUERY_INDEX[word],))
        else:
            out.append(())
    return out


def encode_questions(vocabulary: QuestionVocabulary, questions: Sequence[str], max_words: int):
    """``(words (batch, max_len) int64, lengths (batch,) int64)`` for a list of questions (each cut to
    ``max_words`` tokens; an empty question becomes one ``<unk>``)."""
    encoded = [vocabulary.encode(q)[:max_words] or [1] for q in questions]
    lengths = torch.tensor([len(e) for e in encoded], dtype=torch.long)
    words = torch.zeros(len(encoded), int(lengths.max()) if encoded else 1, dtype=torch.long)
    for i, e in enumerate(encoded):
        words[i, :len(e)] = torch.tensor(e, dtype=torch.long)
    return words, lengths


class BiLSTMParser:
    """A trained (or fresh) question parser: question vocabulary + :class:`Seq2Seq` + configuration.

    Args:
        vocabulary: the question words.
        config: network sizes.
        model: the network (a fresh one, randomly initialised, when None).
    """

    CONFIG_FILE = "config.json"
    VOCAB_FILE = "vocab.json"
    WEIGHTS_FILE = "weights.pt"
    #: the parser's name in model names (:class:`~clevr_poc.parsing.QueryParser`)
    name = "BiLSTM"

    def __init__(self, vocabulary: QuestionVocabulary, config: ParserConfig | None = None,
                 model: Seq2Seq | None = None) -> None:
        self.vocabulary = vocabulary
        self.config = config or ParserConfig()
        self.model = model if model is not None else Seq2Seq(len(vocabulary), self.config,
                                                             copy_targets(vocabulary))

    # ------------------------------------------------------------------ persistence
    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> "BiLSTMParser":
        """Load a parser saved with :meth:`save_pretrained` (weights are loaded as float32).

        Raises:
            FormatError: the folder or one of its files is missing or malformed (naming the file).
        """
        folder = Path(path)
        if not folder.is_dir():
            raise FormatError("parser folder not found", source=folder)
        config = ParserConfig.from_json(read_json(folder / cls.CONFIG_FILE), source=folder / cls.CONFIG_FILE)
        vocabulary = QuestionVocabulary.from_json(read_json(folder / cls.VOCAB_FILE), source=folder / cls.VOCAB_FILE)
        weights = folder / cls.WEIGHTS_FILE
        if not weights.is_file():
            raise FormatError("file not found", source=weights)
        try:
            state = torch.load(weights, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for corrupt files
            raise FormatError(f"cannot read the weights ({exc.__class__.__name__}: {str(exc)[:200]})",
                              source=weights) from None
        model = Seq2Seq(len(vocabulary), config, copy_targets(vocabulary))
        try:
            model.load_state_dict({k: v.float() for k, v in state.items()})
        except (RuntimeError, AttributeError) as exc:
            raise FormatError(f"weights do not fit the configuration ({str(exc).splitlines()[0][:200]})",
                              source=weights) from None
        model.eval()
        return cls(vocabulary, config, model)

    def save_pretrained(self, path: str | os.PathLike[str], *, fp16: bool = True) -> Path:
        """Write ``config.json``, ``vocab.json`` and ``weights.pt`` (fp16 unless ``fp16=False``) into
        ``path`` (created); every file is written atomically. Returns the folder."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / self.CONFIG_FILE, self.config.to_json(), indent=2)
        atomic_write_json(folder / self.VOCAB_FILE, self.vocabulary.to_json(), indent=0)
        state = {k: (v.half() if fp16 and v.is_floating_point() else v).clone()
                 for k, v in self.model.state_dict().items()}
        with atomic_open(folder / self.WEIGHTS_FILE) as handle:  # temp file, fsync, rename (clevr_poc._io)
            torch.save(state, handle)
        return folder

    # ------------------------------------------------------------------ parsing
    def encode(self, questions: Sequence[str]):
        """Padded word indices and lengths, see :func:`encode_questions`."""
        return encode_questions(self.vocabulary, questions, self.config.max_question_words)

    @torch.no_grad()
    def parse_batch(self, questions: Sequence[str], *, batch_size: int = 128) -> list[str]:
        """Parse questions (greedy constrained decoding) into canonical ASP query texts.

        Args:
            questions: English questions (CLEVR wording; unseen words are ``<unk>``).
            batch_size: questions decoded together.

        Returns:
            One ``missing(Q) :- ...`` text per question (always accepted by the sanitizer), in the official
            form when it has one of the six CLEVR-POC question structures (otherwise as decoded).

        Raises:
            FormatError: a question is not a string or is empty (naming its index).
        """
        for i, q in enumerate(questions):
            if not isinstance(q, str):
                raise FormatError("a question must be a string", field=f"questions[{i}]", value=type(q).__name__)
            if not q.strip():
                raise FormatError("empty question", field=f"questions[{i}]")
        was_training = self.model.training
        self.model.eval()
        results: list[str] = []
        try:
            for start in range(0, len(questions), batch_size):
                words, lengths = self.encode(questions[start:start + batch_size])
                decoded = decode(self.model, words, lengths)
                for text in decoded.texts():
                    if text is None:  # pragma: no cover - constrained decoding always ends a query
                        raise AssertionError("constrained decoding did not finish a query")
                    try:
                        checked = sanitize_query(text)
                    except UnsafeProgramError as exc:  # pragma: no cover - the grammar rules this out
                        raise AssertionError(f"constrained decoding produced an invalid query: {exc}") from None
                    try:  # the official variable names and literal order (the decoder's own are X, Y, Z, W)
                        results.append(to_official_form(checked))
                    except FormatError:  # outside the six question structures: kept as decoded
                        results.append(checked.text)
        finally:
            self.model.train(was_training)
        return results

    def parse_queries(self, questions: Sequence[str]) -> list[ParseResult]:
        """:meth:`parse_batch` as :class:`~clevr_poc.parsing.query_parser.ParseResult` objects (the
        :class:`~clevr_poc.parsing.QueryParser` protocol; never a failure: constrained decoding always ends
        a query)."""
        return [ParseResult(text, text, None) for text in self.parse_batch(questions)]

    def parse(self, question: str) -> str:
        """Parse one question; see :meth:`parse_batch`."""
        return self.parse_batch([question])[0]

    def __call__(self, question: str) -> str:
        """Same as :meth:`parse` (so a parser is a plain ``question -> query`` callable)."""
        return self.parse(question)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())
