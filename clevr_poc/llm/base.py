"""The chat-backend protocol shared by the CLEVR-POC LLM parser and the stand-alone LLM baselines.

A *backend* turns a list of chat messages into one assistant reply (a string). Messages follow the
OpenAI chat format: ``{"role": "system" | "user" | "assistant", "content": str | list[part]}``, where a part
is ``{"type": "text", "text": str}`` or ``{"type": "image_url", "image_url": {"url": "data:image/...;base64,..."}}``
(see :mod:`clevr_poc.llm.images`). Backends that read images have ``supports_images = True``; text-only
backends raise :class:`ImagesNotSupportedError` for a message with an image.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

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


class ImagesNotSupportedError(LLMBackendError):
    """A text-only backend was given a message with an image (use a vision-language backend, or the
    benchmark's captions where it ships them, e.g. ``--images caption`` for ScienceQA)."""


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that answers chat messages.

    Attributes:
        name: a short human-readable identifier of backend and model (e.g. ``"openai:gpt-4o"``),
            recorded in result files.
    """

    name: str

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: list[str] | None = None, seed: int | None = None) -> str:
        """Return the assistant's reply to ``messages``.

        Args:
            messages: chat messages ``{"role", "content"}``, oldest first; the last one is normally
                the user turn to answer. ``content`` is a string or a list of text / image parts.
            max_tokens: upper bound on generated tokens (>= 1).
            temperature: sampling temperature (>= 0); 0 means greedy / deterministic decoding.
            stop: strings that end generation (not included in the reply); None for none.
            seed: sampling seed where the backend supports one (ignored otherwise).

        Raises:
            LLMBackendError: the backend failed (connection, HTTP status, bad reply, ...).
            ImagesNotSupportedError: a text-only backend got an image.
            clevr_poc.errors.FormatError: ``messages`` is not a list of role/content dicts
                (:class:`~clevr_poc.llm.images.ImageInputError` for a bad image).
        """
        ...


def _validate_parts(parts: Sequence[Any], source: str, where: str) -> list[dict[str, Any]]:
    """Check a list of content parts (text / image_url); images are decoded once to check them."""
    from clevr_poc.errors import FormatError
    from clevr_poc.llm.images import decode_image_url

    if not parts:
        raise FormatError("content must not be an empty list", source=source, field=where)
    checked: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        field = f"{where}[{index}]"
        if not isinstance(part, Mapping):
            raise FormatError("a content part must be a dict", source=source, field=field, value=type(part).__name__)
        kind = part.get("type")
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise FormatError("a text part needs a string 'text'", source=source, field=f"{field}.text",
                                  value=type(part.get("text")).__name__)
            checked.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            image_url = part.get("image_url")
            if isinstance(image_url, str):  # the older shorthand {"image_url": "data:..."}
                image_url = {"url": image_url}
            if not isinstance(image_url, Mapping):
                raise FormatError("an image_url part needs {'url': ...}", source=source, field=f"{field}.image_url",
                                  value=type(image_url).__name__)
            decode_image_url(image_url.get("url"), where=f"{source} {field}.image_url.url")
            normalized = {"url": image_url["url"]}
            if image_url.get("detail") is not None:
                if image_url["detail"] not in ("low", "high", "auto"):
                    raise FormatError("detail must be low, high or auto", source=source,
                                      field=f"{field}.image_url.detail", value=image_url["detail"])
                normalized["detail"] = image_url["detail"]
            checked.append({"type": "image_url", "image_url": normalized})
        else:
            raise FormatError("content part type must be 'text' or 'image_url'", source=source,
                              field=f"{field}.type", value=kind)
    return checked


def validate_messages(messages: Sequence[Mapping[str, Any]], *, source: str = "messages") -> list[dict[str, Any]]:
    """Check chat messages and return them as plain ``{"role", "content"}`` dicts.

    ``content`` is a string or a non-empty list of ``text`` / ``image_url`` parts; every image is decoded
    and checked against the caps of :mod:`clevr_poc.llm.images`. At most
    :data:`~clevr_poc.llm.images.MAX_IMAGES_PER_REQUEST` images in all.

    Raises:
        clevr_poc.errors.FormatError: not a non-empty list, a message without a known ``role``, a
            ``content`` that is neither a string nor a list of parts, an unknown part type.
        clevr_poc.llm.images.ImageInputError: an image that is not a decodable ``data:`` URL within the caps,
            or too many images.
    """
    from clevr_poc.errors import FormatError
    from clevr_poc.llm.images import MAX_IMAGES_PER_REQUEST, ImageInputError

    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise FormatError("expected a non-empty list of chat messages", source=source, value=type(messages).__name__)
    checked: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise FormatError("a chat message must be a dict", source=source, field=f"[{index}]",
                              value=type(message).__name__)
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise FormatError(f"role must be one of {sorted(ROLES)}", source=source, field=f"[{index}].role",
                              value=role)
        if isinstance(content, str):
            checked.append({"role": role, "content": content})
        elif isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
            checked.append({"role": role, "content": _validate_parts(content, source, f"[{index}].content")})
        else:
            raise FormatError("content must be a string or a list of content parts", source=source,
                              field=f"[{index}].content", value=type(content).__name__)
    images = count_images(checked)
    if images > MAX_IMAGES_PER_REQUEST:
        raise ImageInputError(f"more than {MAX_IMAGES_PER_REQUEST} images in one request", source=source,
                              value=images)
    return checked


def count_images(messages: Sequence[Mapping[str, Any]]) -> int:
    """Number of ``image_url`` parts in (validated) ``messages``."""
    return sum(1 for m in messages if not isinstance(m.get("content"), str)
               for part in m["content"] if part.get("type") == "image_url")


def message_text(content: str | Sequence[Mapping[str, Any]]) -> str:
    """The text of a message's content: the string itself, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def text_only_messages(messages: Sequence[Mapping[str, Any]], *, backend: str,
                       model: str | None = None) -> list[dict[str, str]]:
    """Validated messages with string contents, for a backend that reads no images.

    Raises:
        ImagesNotSupportedError: a message has an image part.
        clevr_poc.errors.FormatError: malformed messages (see :func:`validate_messages`).
    """
    checked = validate_messages(messages)
    images = count_images(checked)
    if images:
        raise ImagesNotSupportedError(f"this backend reads text only and the request has {images} image(s); "
                                      "use a vision-language backend (openai:MODEL@URL with a VLM server, or "
                                      "transformers:MODEL) or the benchmark's captions", backend=backend,
                                      model=model)
    return [{"role": m["role"], "content": message_text(m["content"])} for m in checked]


def apply_stop(text: str, stop: list[str] | str | None) -> str:
    """Cut ``text`` at the earliest occurrence of any stop string (as OpenAI-compatible servers do)."""
    if not stop:
        return text
    stops = [stop] if isinstance(stop, str) else list(stop)
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


def check_generation_args(max_tokens: int, temperature: float) -> None:
    """Validate the common generation arguments; raises :class:`ValueError` on a bad value."""
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
