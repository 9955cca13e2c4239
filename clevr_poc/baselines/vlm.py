"""A vision-language-model baseline on CLEVR-POC: the partial-scene *image*, the constraints in English and
the question go to a VLM; the reply is read as an answer set of the queried attribute.

No published CLEVR-POC system shows the image to a language model; this baseline is ours. It differs
from the stand-alone LLM (§4.1.3, :mod:`clevr_poc.baselines.llm_standalone`) only in what the model sees of
the scene: the rendered partial scene (``example.image_path``, sent with its original bytes as an OpenAI
``image_url`` part) instead of the gold scene graph. The constraints are the same English text
(:func:`~clevr_poc.baselines.llm_standalone.constraints_text`: the background theory, then the
environment's constraints, :meth:`Environment.describe`), the answer format the same ``###{v1, v2}###``
and the reply parser the same (:func:`~clevr_poc.baselines.llm_standalone.parse_reply`: a missing block,
an unknown word or a value of another attribute is a parse failure, never a guess). Zero-shot: the
worked examples of the LLM baseline have no images.

Prompts (:data:`PROMPTS`; full texts in ``docs/baselines.md``):

* ``direct`` — system: :data:`VLM_TASK`; user: image, constraints, question, :data:`DIRECT_INSTRUCTION`.
* ``list-then-reason`` — the same, with :data:`LIST_INSTRUCTION`: first list every visible object as JSON
  between ``<objects>`` and ``</objects>`` (color, shape, size, material, region), then reason, then answer.
  The listed scene is scored against the gold partial scene with the perception metrics of
  :mod:`clevr_poc.baselines.vlm_scene`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clevr_poc.baselines.llm_standalone import QUESTION_PREFIX, ChatAnsweringModel, constraints_text
from clevr_poc.errors import FormatError

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example
    from clevr_poc.environments import Environment
    from clevr_poc.llm.base import ChatBackend

#: The prompt variants.
PROMPTS: tuple[str, ...] = ("direct", "list-then-reason")

VLM_TASK = (
    "You are a helpful assistant who answers questions about a hidden object in a picture of a 3D scene.\n"
    "The picture shows the visible objects of the scene. Every object has a color, a shape, a size, a material "
    "and lies in one of the regions 0, 1, 2, 3 of the floor. The scene has one more object that is hidden: it "
    "is not in the picture. The question asks about an attribute of an object that may be the hidden one. "
    "Give every value of the asked attribute that is possible under the constraints and the visible objects, "
    "and only those.\n"
    "Answer with the values between ###{ and }###, separated by commas, for example ###{red, blue}### or "
    "###{cube}###."
)
DIRECT_INSTRUCTION = "Give the answer as ###{...}### only."
LIST_INSTRUCTION = (
    "First list every object you see in the picture as a JSON list between <objects> and </objects>, one "
    "object per entry with the keys \"color\", \"shape\", \"size\", \"material\" and \"region\" (0-3), for "
    "example <objects>[{\"color\": \"red\", \"shape\": \"cube\", \"size\": \"large\", \"material\": \"metal\", "
    "\"region\": 0}]</objects>. Then reason step by step about the hidden object. End with the answer as "
    "###{...}###."
)
#: Reply length limits per prompt (tokens): an answer block, or a list of up to ~10 objects plus reasoning.
DEFAULT_MAX_TOKENS: dict[str, int] = {"direct": 64, "list-then-reason": 768}


def user_text(environment: Environment, question: str, prompt: str) -> str:
    """The text of the user turn (after the image): constraints, question, the prompt's instruction."""
    instruction = DIRECT_INSTRUCTION if prompt == "direct" else LIST_INSTRUCTION
    return (
        "Constraints: the scene contains the visible objects of the picture and one additional object that is "
        "hidden. The scene must conform to the following constraints.\n"
        f"{constraints_text(environment)}\n\n"
        f"Question: {QUESTION_PREFIX} {question.strip()}\n"
        f"{instruction}"
    )


def build_vlm_messages(environment: Environment, image: Any, question: str, *, prompt: str = "direct") -> list[dict[str, Any]]:
    """System turn and one user turn ``[image part, text part]`` for one question.

    Args:
        environment: the example's :class:`~clevr_poc.environments.Environment`.
        image: the partial-scene image: a path, bytes or PIL image (:func:`clevr_poc.llm.images.image_part`).
        question: the question text.
        prompt: one of :data:`PROMPTS`.

    Raises:
        FormatError: an unknown prompt; ImageInputError: an unreadable image.
    """
    from clevr_poc.llm.images import image_part, text_part

    if prompt not in PROMPTS:
        raise FormatError(f"unknown VLM prompt; expected one of {list(PROMPTS)}", field="prompt", value=prompt)
    return [{"role": "system", "content": VLM_TASK},
            {"role": "user", "content": [image_part(image), text_part(user_text(environment, question, prompt))]}]


class VLMBaseline(ChatAnsweringModel):
    """Image + constraints + question -> a vision-language chat backend -> the parsed answer set.

    Args:
        backend: a chat backend that reads images (``supports_images``; OpenAI-compatible server with a VLM,
            ``transformers:MODEL``) or a spec string for :func:`clevr_poc.llm.make_backend`.
        prompt: ``direct`` (default) or ``list-then-reason``.
        max_tokens: reply length limit (default :data:`DEFAULT_MAX_TOKENS` of the prompt).
        temperature, seed: decoding (0: greedy).
        workers: parallel requests in :meth:`predict_batch` (>= 1).
        name: model name in reports (default ``"VLM <prompt> (<backend name>)"``).
        device, dtype: for a ``transformers:`` spec string.

    Raises:
        FormatError: unknown prompt, a backend that reads no images, bad numbers; an example without a
            rendered image (naming its image file) when it is asked.
    """

    def __init__(self, backend: ChatBackend | str, *, prompt: str = "direct", max_tokens: int | None = None,
                 temperature: float = 0.0, seed: int | None = 0, workers: int = 1, name: str | None = None,
                 device: str = "auto", dtype: str = "auto", timeout: float = 60) -> None:
        if prompt not in PROMPTS:
            raise FormatError(f"unknown VLM prompt; expected one of {list(PROMPTS)}", field="--prompt", value=prompt)
        if isinstance(backend, str):
            from clevr_poc.llm import make_backend

            backend = make_backend(backend, device=device, dtype=dtype, timeout=timeout)
        if not callable(getattr(backend, "complete", None)):
            raise TypeError(f"backend must have a complete(messages, ...) method, got {type(backend).__name__}")
        if getattr(backend, "supports_images", True) is False:
            raise FormatError("this backend reads text only; the VLM baseline needs one that reads images "
                              "(openai:MODEL@URL serving a VLM, or transformers:MODEL)", field="--backend",
                              value=getattr(backend, "name", type(backend).__name__))
        self.max_tokens = DEFAULT_MAX_TOKENS[prompt] if max_tokens is None else int(max_tokens)
        if self.max_tokens < 1 or workers < 1:
            raise FormatError("both must be positive", field="--max-tokens/--workers",
                              value=(self.max_tokens, workers))
        self.backend = backend
        self.prompt = prompt
        self.temperature = temperature
        self.seed = seed
        self.workers = int(workers)
        self.name = name or f"VLM {prompt} ({getattr(backend, 'name', type(backend).__name__)})"

    def __repr__(self) -> str:
        return f"VLMBaseline(name={self.name!r}, prompt={self.prompt!r})"

    def messages_for(self, example: Example) -> list[dict[str, Any]]:
        """The chat messages for ``example`` (its rendered partial-scene image, environment, question)."""
        if example.image_path is None:
            raise FormatError("the question's image is not rendered (render the dataset first: python -m "
                              "clevr_poc render)", field="image_filename", value=example.question.image_filename)
        return build_vlm_messages(example.environment, example.image_path, example.question.text, prompt=self.prompt)


__all__ = ["DEFAULT_MAX_TOKENS", "DIRECT_INSTRUCTION", "LIST_INSTRUCTION", "PROMPTS", "VLMBaseline", "VLM_TASK",
           "build_vlm_messages", "user_text"]
