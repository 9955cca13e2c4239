"""Chat backends: the OpenAI-compatible client against a real local HTTP server, and the offline GGUF model."""

from __future__ import annotations

import socket
import time

import pytest

from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.llm import ChatBackend, LLMBackendError, make_backend
from clevr_poc.llm.testing import ChatCompletionsServer, ServerFailure, apply_stop

openai = pytest.importorskip("openai")
from clevr_poc.llm.openai_backend import PLACEHOLDER_API_KEY, OpenAIChatBackend  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_request_content_and_reply_parsing():
    seen = []

    def reply(messages):
        seen.append(messages)
        return f"{len(messages)} messages; last: {messages[-1]['content']}\nsecond line"

    with ChatCompletionsServer(reply) as server:
        backend = OpenAIChatBackend(model="tiny-model", base_url=server.base_url)
        assert isinstance(backend, ChatBackend)
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello?"}]
        text = backend.complete(messages, max_tokens=7, temperature=0.0, stop=["\n"], seed=11)
        assert text == "2 messages; last: Hello?"  # the server honours the stop sequence
        body = server.requests[0]
        assert body["model"] == "tiny-model"
        assert body["messages"] == messages
        assert (body["max_tokens"], body["temperature"], body["stop"], body["seed"]) == (7, 0.0, ["\n"], 11)
        # no stop / seed given -> none sent
        backend.complete([{"role": "user", "content": "x"}])
        assert "stop" not in server.requests[1] and "seed" not in server.requests[1]
        assert server.requests[1]["max_tokens"] == 256
    assert backend.name == f"openai:tiny-model@{server.base_url}"


def test_http_500_becomes_a_typed_error_naming_url_and_model():
    def reply(messages):
        raise ServerFailure(500, "model crashed")

    with ChatCompletionsServer(reply) as server:
        backend = OpenAIChatBackend(model="m1", base_url=server.base_url, max_retries=0)
        with pytest.raises(LLMBackendError) as info:
            backend.complete([{"role": "user", "content": "hi"}])
    error = info.value
    assert isinstance(error, ClevrPocError) and error.status == 500
    assert "model crashed" in str(error) and server.base_url in str(error) and "'m1'" in str(error)


def test_client_retries_then_reports_the_last_status():
    def reply(messages):
        raise ServerFailure(503, "overloaded")

    with ChatCompletionsServer(reply) as server:
        backend = OpenAIChatBackend(model="m1", base_url=server.base_url, max_retries=1)
        with pytest.raises(LLMBackendError, match="overloaded") as info:
            backend.complete([{"role": "user", "content": "hi"}])
        assert len(server.requests) == 2 and info.value.status == 503


def test_connection_refused_is_a_typed_error():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    backend = OpenAIChatBackend(model="m2", base_url=url, timeout=5, max_retries=0)
    start = time.monotonic()
    with pytest.raises(LLMBackendError, match="cannot connect") as info:
        backend.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < 5
    assert url in str(info.value) and "'m2'" in str(info.value) and info.value.status is None


def test_model_url_and_placeholder_key_from_environment(monkeypatch):
    with ChatCompletionsServer(lambda messages: "ok") as server:
        monkeypatch.setenv("CLEVR_POC_LLM_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        backend = make_backend("openai")
        assert backend.complete([{"role": "user", "content": "hi"}]) == "ok"
        assert server.requests[0]["model"] == "env-model"
        assert backend._client.api_key == PLACEHOLDER_API_KEY


def test_missing_model_or_key_fails_early(monkeypatch):
    monkeypatch.delenv("CLEVR_POC_LLM_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMBackendError, match="no model given"):
        OpenAIChatBackend(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(LLMBackendError, match="no API key"):
        OpenAIChatBackend(model="gpt-4o")


def test_bad_messages_are_rejected_before_any_request():
    with ChatCompletionsServer() as server:
        backend = OpenAIChatBackend(model="m", base_url=server.base_url)
        with pytest.raises(FormatError, match="role must be one of"):
            backend.complete([{"role": "robot", "content": "hi"}])
        with pytest.raises(FormatError, match="non-empty list"):
            backend.complete("hi")  # type: ignore[arg-type]
        assert server.requests == []


def test_make_backend_specs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = make_backend("openai:qwen@http://127.0.0.1:8000/v1")
    assert (backend.model, backend.base_url) == ("qwen", "http://127.0.0.1:8000/v1")
    with pytest.raises(FormatError, match="unknown backend"):
        make_backend("anthropic:claude")
    with pytest.raises(FormatError, match="http"):
        make_backend("openai:m@ftp://host")


def test_server_helpers():
    assert apply_stop("a\nb", ["\n"]) == "a" and apply_stop("abc", None) == "abc"
    with pytest.raises(ValueError, match="loopback"):
        ChatCompletionsServer(host="0.0.0.0")


# -- offline GGUF model -------------------------------------------------------------------------------------
def test_local_smollm2_answers_a_tiny_prompt():
    pytest.importorskip("llama_cpp")
    from clevr_poc.llm.local import LocalGGUFBackend, smollm2_gguf_path

    try:
        path = smollm2_gguf_path()
    except LLMBackendError as exc:
        pytest.skip(str(exc))
    backend = make_backend("smollm2")
    assert isinstance(backend, LocalGGUFBackend) and backend.model_path == path
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    first = backend.complete(messages, max_tokens=8)
    assert "paris" in first.lower()
    assert backend.complete(messages, max_tokens=8) == first  # greedy decoding is deterministic


def test_local_backend_missing_file_is_typed(tmp_path):
    from clevr_poc.llm.local import LocalGGUFBackend

    with pytest.raises(LLMBackendError, match="not found"):
        LocalGGUFBackend(tmp_path / "missing.gguf")
