"""The chat-backend protocol shared by the CLEVR-POC LLM parser and the stand-alone LLM baselines.

A *backend* turns a list of chat messages into one assistant reply (a string). Messages follow the
OpenAI chat format: ``{"role": "system" | "user" | "assistant", "content": str}``.
"""

from __future__ import annotations

from typing import Mapping, Protocol, Sequence, runtime_checkable

from clevr_poc.errors import ClevrPocError

#: Roles a chat message may have (OpenAI chat-completions format).
ROLES: frozenset[str] = frozenset({"system", "user", "assistant"})


class LLMBackendError(ClevrPocError, RuntimeError):
    """A language-model backend could not produce a reply.

    Raised for connection failures, HTTP errors, time-outs, malformed replies, a missing model
    file or a missing optional dependency. The message names the backend, the model and (for HTTP
    backends) the base URL.

    Attributes:
        backend: backend name (e.g. ``"openai"``, ``"local-gguf"``).
        model: model name or file path (may be None).
        url: base URL of an HTTP backend (may be None).
        status: HTTP status code where the server answered with an error (else None).
    """

    def __init__(self, message: str, *, backend: str | None = None, model: str | None = None,
                 url: str | None = None, status: int | None = None):
        self.backend = backend
        self.model = model
        self.url = url
        self.status = status
        where = ", ".join(
            part for part in (
                f"backend {backend}" if backend else "",
                f"model {model!r}" if model else "",
                f"url {url}" if url else "",
                f"HTTP {status}" if status is not None else "",
            ) if part
        )
        super().__init__(f"{message} [{where}]" if where else message)


class PromptTooLongError(LLMBackendError):
    """The prompt does not fit the model's context window (a per-prompt failure: other prompts may work).

    Raised by the local backend when llama.cpp reports that the tokens exceed ``n_ctx``, and by the HTTP
    backend for a 400 answer whose message mentions the context length.
    """


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that answers chat messages.

    Attributes:
        name: a short human-readable identifier of backend and model (e.g. ``"openai:gpt-4o"``),
            recorded in result files.
    """

    name: str

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: list[str] | None = None, seed: int | None = None) -> str:
        """Return the assistant's reply to ``messages``.

        Args:
            messages: chat messages ``{"role", "content"}``, oldest first; the last one is normally
                the user turn to answer.
            max_tokens: upper bound on generated tokens (>= 1).
            temperature: sampling temperature (>= 0); 0 means greedy / deterministic decoding.
            stop: strings that end generation (not included in the reply); None for none.
            seed: sampling seed where the backend supports one (ignored otherwise).

        Raises:
            LLMBackendError: the backend failed (connection, HTTP status, bad reply, ...).
            clevr_poc.errors.FormatError: ``messages`` is not a list of role/content dicts.
        """
        ...


def validate_messages(messages: Sequence[Mapping[str, str]], *, source: str = "messages") -> list[dict[str, str]]:
    """Check chat messages and return them as plain ``{"role", "content"}`` dicts.

    Raises:
        clevr_poc.errors.FormatError: not a non-empty list, a message without a known ``role`` or a
            string ``content``.
    """
    from clevr_poc.errors import FormatError

    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise FormatError("expected a non-empty list of chat messages", source=source, value=type(messages).__name__)
    checked: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise FormatError("a chat message must be a dict", source=source, field=f"[{index}]",
                              value=type(message).__name__)
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise FormatError(f"role must be one of {sorted(ROLES)}", source=source, field=f"[{index}].role",
                              value=role)
        if not isinstance(content, str):
            raise FormatError("content must be a string", source=source, field=f"[{index}].content",
                              value=type(content).__name__)
        checked.append({"role": role, "content": content})
    return checked


def check_generation_args(max_tokens: int, temperature: float) -> None:
    """Validate the common generation arguments; raises :class:`ValueError` on a bad value."""
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
