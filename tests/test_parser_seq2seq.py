"""The BiLSTM seq2seq question parser: tokens, grammar automaton, constrained decoding, training, weights."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from clevr_poc.errors import FormatError  # noqa: E402
from clevr_poc.parsing import programs_equal, to_official_form  # noqa: E402
from clevr_poc.parsing.grammar import MAX_LITERALS, GrammarError, GrammarState, allowed_mask_sequence  # noqa: E402
from clevr_poc.parsing.seq2seq import (  # noqa: E402
    BiLSTMParser, ParserConfig, choice_targets, copy_targets, decode,
)
from clevr_poc.parsing.supervised_training import draw_pairs, evaluate, load_pairs, pretrain  # noqa: E402
from clevr_poc.parsing.vocabulary import (  # noqa: E402
    QUERY_INDEX, QUERY_TOKENS, QuestionVocabulary, query_tokens, question_tokens, tokens_to_query,
)
from clevr_poc.reasoning import sanitize_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "models" / "parser_bilstm"
SMALL = ParserConfig(word_vec_dim=32, hidden_size=48, decoder_hidden_size=64)

# The paper's three example questions (§3.4, Appendix A, Appendix C.1) with their ASP in the official form
# (rel(Y,X): X is rel of Y; "the other X with the same P as Y": X!=Y, same_P(Y,X); clevr_poc.queries.official_form).
PAPER_QUESTIONS = [
    ("What is the color of the other cylinder that is the same material as the medium red thing?",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,size,medium), hasProperty(Y,color,red), "
     "hasProperty(X,shape,cylinder), X!=Y, same_material(Y,X)."),
    ("There is another red rubber object that is the same shape as the big purple object; what size is it?",
     "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,size,large), hasProperty(Y,color,purple), "
     "hasProperty(X,color,red), hasProperty(X,material,rubber), X!=Y, same_shape(Y,X)."),
    ("The other cylinder that is the same material as the medium red thing is what color?",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,size,medium), hasProperty(Y,color,red), "
     "hasProperty(X,shape,cylinder), X!=Y, same_material(Y,X)."),
]
# Questions of our own in the official CLEVR-POC phrasings ("...; what is its size?", "What is ... made of?",
# "[that is] <R> the ..."), one per multi-object family, with their exact official-form programs.
OFFICIAL_PHRASING_QUESTIONS = [
    ("There is a metal thing right of the purple cube; what is its size?",
     "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,purple), hasProperty(Y,shape,cube), "
     "hasProperty(X,material,metal), right(Y,X), X!=Y."),
    ("What color is the large thing in front of the rubber cylinder left of the yellow thing?",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y2,color,yellow), hasProperty(Y1,material,rubber), "
     "hasProperty(Y1,shape,cylinder), hasProperty(X,size,large), front(Y1,X), left(Y2,Y1), X!=Y1, Y1!=Y2, X!=Y2."),
    ("What is the cone that is both right of the blue cube and behind the large sphere made of?",
     "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y2,size,large), hasProperty(Y2,shape,sphere), "
     "hasProperty(Y1,color,blue), hasProperty(Y1,shape,cube), hasProperty(X,shape,cone), right(Y1,X), "
     "behind(Y2,X), X!=Y1, Y1!=Y2, X!=Y2."),
    ("There is a green thing that is left of the cylinder that is in front of the metal sphere that is behind "
     "the small cube; what shape is it?",
     "missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y3,size,small), hasProperty(Y3,shape,cube), "
     "hasProperty(Y2,material,metal), hasProperty(Y2,shape,sphere), hasProperty(Y1,shape,cylinder), "
     "hasProperty(X,color,green), left(Y1,X), front(Y2,Y1), behind(Y3,Y2), X!=Y1, Y1!=Y2, Y2!=Y3, X!=Y2, "
     "X!=Y3, Y1!=Y3."),
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread here (restored after): small LSTM steps gain nothing from two threads, and on a
    busy machine spinning OpenMP threads slow them down several times."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def ids(tokens):
    return [QUERY_INDEX[t] for t in tokens]


# ---------------------------------------------------------------------- tokens
def test_question_tokens_normalise_synonyms_and_punctuation():
    assert question_tokens("There is a big shiny ball; how big is it?") == [
        "there", "is", "a", "large", "metal", "sphere", ";", "how", "large", "is", "it", "?"]
    assert question_tokens("The medium-sized matte block, left of the tiny object.") == [
        "the", "medium", "rubber", "cube", ",", "left", "of", "the", "small", "thing", "."]
    vocabulary = QuestionVocabulary.build(["What color is the cube?", "What size is the cube?"])
    assert vocabulary.words[:5] == ("<pad>", "<unk>", "?", "cube", "is")  # by frequency, then alphabetical
    assert vocabulary.encode("What colour is the cube?")[1] == 1  # unseen word -> <unk>
    assert vocabulary.unknown_words("What colour is the cube?") == ["colour"]


def test_query_tokens_walk_order_and_canonical_variables():
    gold = ("missing(A) :- hasProperty(B,shape,A), hasProperty(C,color,red), hasProperty(B,size,small), "
            "hasProperty(D,shape,cube), left(C,B), behind(D,C).")
    text = tokens_to_query(query_tokens(gold))
    assert text == ("missing(Q) :- hasProperty(X,shape,Q),hasProperty(X,size,small),left(Y,X),"
                    "hasProperty(Y,color,red),behind(Z,Y),hasProperty(Z,shape,cube).")
    assert programs_equal(text, gold)
    # official-form targets: the decoder's names (X, Y, Z, W in order of use) and walk order, every
    # inequality kept; to_official_form gives the official text back
    for _, official in OFFICIAL_PHRASING_QUESTIONS:
        decoded = tokens_to_query(query_tokens(official))
        assert "Y1" not in decoded and programs_equal(decoded, official)
        assert to_official_form(decoded) == official
    with pytest.raises(FormatError, match="token set"):
        query_tokens("missing(Q) :- hasProperty(X,color,Q), at(X,2).")
    with pytest.raises(FormatError, match="exactly once"):
        query_tokens("missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,Q).")


# ---------------------------------------------------------------------- grammar
def test_grammar_masks_along_a_gold_sequence():
    tokens = ids(query_tokens(PAPER_QUESTIONS[0][1]))
    masks = allowed_mask_sequence(tokens)
    assert masks[torch.arange(len(tokens)), torch.tensor(tokens)].all()
    choices, choice_masks = choice_targets(tokens)
    # head and parentheses are forced: the first choice is the queried attribute, among the 4 attributes
    assert QUERY_TOKENS[choices[0]] == "color" and int(choice_masks[0].sum()) == 4
    # a value choice allows exactly the domain of the attribute just chosen (8 colours)
    state = GrammarState()
    for t in ids(["missing", "(", "Q", ")", ":-", "hasProperty", "(", "X", ",", "color", ",", "Q", ")", ",",
                  "hasProperty", "(", "X", ",", "color", ","]):
        state.advance(t)
    assert sorted(QUERY_TOKENS[t] for t in state.allowed()) == sorted(
        ["gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"])


@pytest.mark.parametrize("bad", [
    "missing(Q) :- hasProperty(X,color,cube).",                         # value of another attribute
    "missing(Q) :- left(Y,X), hasProperty(X,color,Q).",                 # answer literal not first
    "missing(Q) :- hasProperty(X,color,Q), left(X,X).",                 # a relation to itself
    "missing(Q) :- hasProperty(X,color,Q), left(Z,X).",                 # Z before Y
])
def test_grammar_rejects(bad):
    tokens = [t for t in bad.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").replace(":-", " :- ")
              .replace(".", " . ").split()]
    with pytest.raises(GrammarError):
        allowed_mask_sequence(ids(tokens))


def test_random_walks_through_the_grammar_always_end_in_valid_queries():
    """Adversarial walks (comparisons and ',' preferred, '.' avoided) still end within the limits."""
    rng = random.Random(0)
    for walk in range(300):
        state = GrammarState()
        while not state.done:
            allowed = state.allowed()
            assert allowed, "the automaton must never get stuck"
            prefer = [t for t in allowed if QUERY_TOKENS[t] in ("X", "Y", "Z", "W", "V", "U", ",")]
            state.advance(rng.choice(prefer) if prefer and walk % 2 == 0 else rng.choice(allowed))
        checked = sanitize_query(tokens_to_query([QUERY_TOKENS[t] for t in state.tokens]))
        assert len(checked.literals) <= MAX_LITERALS


# ---------------------------------------------------------------------- decoding
def _untrained(questions, config=SMALL, seed=0):
    torch.manual_seed(seed)
    return BiLSTMParser(QuestionVocabulary.build(questions), config)


def test_constrained_sampling_from_an_untrained_model_is_always_valid():
    questions = [q for q, _ in PAPER_QUESTIONS]
    parser = _untrained(questions)
    words, lengths = parser.encode(questions * 67)[0][:200], parser.encode(questions * 67)[1][:200]
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        decoded = decode(parser.model, words, lengths, sample=True, temperature=2.0, generator=generator)
    texts = decoded.texts()
    assert len(texts) == 200 and all(decoded.valid)
    checked = [sanitize_query(t) for t in texts]  # raises on any invalid query
    assert all(c.head_variable == "Q" and c.attribute is not None for c in checked)
    assert len({c.text for c in checked}) > 50  # really sampled, not one program
    assert torch.isfinite(decoded.log_probs).all() and (decoded.log_probs < 0).all()
    # without the grammar, the same untrained model mostly writes non-queries
    with torch.no_grad():
        free = decode(parser.model, words, lengths, sample=True, constrained=False, generator=generator)
    assert sum(free.valid) < 20


def test_greedy_parse_batch_equals_parse_and_is_canonical():
    parser = _untrained([q for q, _ in PAPER_QUESTIONS])
    texts = parser.parse_batch([q for q, _ in PAPER_QUESTIONS])
    assert texts == [parser.parse(q) for q, _ in PAPER_QUESTIONS]
    assert all(sanitize_query(t).text == t for t in texts)


def test_parse_bad_inputs_are_format_errors():
    parser = _untrained(["What color is the cube?"])
    with pytest.raises(FormatError, match="empty question"):
        parser.parse("   ")
    with pytest.raises(FormatError, match=r"questions\[1\]"):
        parser.parse_batch(["What color is the cube?", 42])  # type: ignore[list-item]


def test_copy_targets_name_values_attributes_and_relations():
    vocabulary = QuestionVocabulary(("<pad>", "<unk>", "red", "the", "left", "size"))
    assert copy_targets(vocabulary) == [(), (), (QUERY_INDEX["red"], QUERY_INDEX["color"]), (),
                                        (QUERY_INDEX["left"],), (QUERY_INDEX["size"], QUERY_INDEX["same_size"])]


# ---------------------------------------------------------------------- weights
def test_save_and_load_round_trip(tmp_path):
    questions = [q for q, _ in PAPER_QUESTIONS]
    parser = _untrained(questions)
    parser.save_pretrained(tmp_path / "p")
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["config.json", "vocab.json", "weights.pt"]
    state = torch.load(tmp_path / "p" / "weights.pt", weights_only=True)
    assert all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point())
    again = BiLSTMParser.from_pretrained(tmp_path / "p")
    assert again.config == parser.config and again.vocabulary == parser.vocabulary
    # fp16 rounding does not change the greedy parses of an untrained model here
    assert again.parse_batch(questions) == parser.parse_batch(questions)


def test_from_pretrained_errors_name_the_file(tmp_path):
    with pytest.raises(FormatError, match="parser folder not found"):
        BiLSTMParser.from_pretrained(tmp_path / "nothing")
    parser = _untrained(["What color is the cube?"])
    parser.save_pretrained(tmp_path / "p")
    (tmp_path / "p" / "weights.pt").write_bytes(b"not a torch file")
    with pytest.raises(FormatError, match="weights.pt"):
        BiLSTMParser.from_pretrained(tmp_path / "p")
    (tmp_path / "p" / "config.json").write_text('{"format_version": 99}')
    with pytest.raises(FormatError, match="format_version"):
        BiLSTMParser.from_pretrained(tmp_path / "p")


# ---------------------------------------------------------------------- training
def test_tiny_training_run_learns_its_pairs(tiny_dataset):
    """~80 generated pairs, a small network (64-d words, 64+64 encoder, 128 decoder), 150 steps of 16:
    at least 90% of the pairs are parsed back to their exact programs (0.95 in our runs)."""
    torch.manual_seed(0)
    pairs = load_pairs(tiny_dataset, "train")
    assert len(pairs) == 80
    config = ParserConfig(word_vec_dim=64, hidden_size=64, decoder_hidden_size=128)
    parser = BiLSTMParser(QuestionVocabulary.build(p.question for p in pairs), config)
    optimizer = torch.optim.Adam(parser.model.parameters(), lr=5e-3)
    pretrain(parser, pairs, steps=150, optimizer=optimizer, batch_size=16, lr=5e-3, progress=False)
    result = evaluate(parser, pairs)
    assert result.program_accuracy >= 0.9, result
    assert result.exact_accuracy >= result.program_accuracy  # an equal program gives the gold answer
    assert result.failures == 0


def test_draw_pairs_is_a_seeded_subset(tiny_dataset):
    pairs = load_pairs(tiny_dataset, "train")
    a, b = draw_pairs(pairs, 10, seed=1), draw_pairs(pairs, 10, seed=1)
    assert [p.question for p in a] == [p.question for p in b] and len(a) == 10
    assert [p.question for p in draw_pairs(pairs, 10, seed=2)] != [p.question for p in a]
    with pytest.raises(FormatError, match="only"):
        draw_pairs(pairs, len(pairs) + 1, seed=0)


# ---------------------------------------------------------------------- the shipped model
@pytest.fixture(scope="module")
def shipped():
    if not (SHIPPED / "weights.pt").is_file():
        pytest.skip("models/parser_bilstm not trained yet")
    return BiLSTMParser.from_pretrained(SHIPPED)


def test_shipped_parser_parses_the_papers_examples(shipped):
    parsed = shipped.parse_batch([q for q, _ in PAPER_QUESTIONS])
    for (question, gold), text in zip(PAPER_QUESTIONS, parsed):
        assert text == gold, (question, text)


def test_shipped_parser_writes_the_exact_official_programs_of_official_phrasings(shipped):
    parsed = shipped.parse_batch([q for q, _ in OFFICIAL_PHRASING_QUESTIONS])
    for (question, gold), text in zip(OFFICIAL_PHRASING_QUESTIONS, parsed):
        assert text == gold, (question, text)


def test_shipped_parser_was_trained_on_official_form_targets(shipped):
    """Its raw decoding (before to_official_form) already writes every pairwise inequality."""
    words, lengths = shipped.encode([q for q, _ in OFFICIAL_PHRASING_QUESTIONS])
    shipped.model.eval()
    with torch.no_grad():
        raw = decode(shipped.model, words, lengths).texts()
    for (question, gold), text in zip(OFFICIAL_PHRASING_QUESTIONS, raw):
        assert programs_equal(text, gold), (question, text)


def test_shipped_parser_is_small():
    if not (SHIPPED / "weights.pt").is_file():
        pytest.skip("models/parser_bilstm not trained yet")
    assert (SHIPPED / "weights.pt").stat().st_size < 60 * 2 ** 20
    assert (SHIPPED / "MODEL_CARD.md").is_file()
