"""Tiny, randomly initialised vision-language chat models built offline, for tests and timing the local path.

:func:`build_tiny_vlm` (``family="qwen2-vl"``, the default) writes a complete model folder (``config.json``, ``model.safetensors``, processor,
tokenizer, chat template) that :class:`~clevr_poc.llm.transformers_backend.TransformersVLMBackend` loads
with the real ``from_pretrained`` code: a 2-layer Qwen2-VL text model (hidden size 32) with a 1-block
vision tower (patch 14, 2x2 merge), ~0.1 M parameters, and a byte-level BPE tokenizer of 400 tokens trained
here on a few sentences (Qwen's special tokens ``<|im_start|>``, ``<|im_end|>``, ``<|vision_start|>``,
``<|image_pad|>``, ...). Nothing is downloaded. Its replies are random text: it exercises shapes, the chat
template, image preprocessing and generation, not answers. The image processor keeps images between
4 and 64 merged 28x28 patches (``min_pixels`` / ``max_pixels``), so a 320x240 CLEVR image becomes 54 image
tokens. ``family="llava"`` writes a tiny LLaVA instead (2-layer CLIP vision tower on 28x28 crops, patch 14,
so 4 image tokens; 2-layer Llama text model; ``USER: ... ASSISTANT:`` template).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: Qwen2-VL's special tokens, in id order 0..6.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                                   "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
#: Families :func:`build_tiny_vlm` can build.
FAMILIES: tuple[str, ...] = ("qwen2-vl", "llava")
LLAVA_SPECIAL_TOKENS: tuple[str, ...] = ("<unk>", "<s>", "</s>", "<image>", "<pad>")
LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() }}: {% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<image>\n{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
#: A ChatML template (Qwen's layout) that reads string or part-list contents; images become
#: ``<|vision_start|><|image_pad|><|vision_end|>`` (the processor expands the pad to the image's tokens).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = ("The answer is A. What color is the small cube? Objects: red blue green gray brown purple cyan yellow "
           "large medium small metal rubber cube sphere cylinder cone region 0 1 2 3 ###{ }### [Question] "
           "[Choices] (A) (B) (C) (D) Options: Context: Answer: Let's think step-by-step!")


def _bpe(special: tuple[str, ...], vocab_size: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([_CORPUS] * 4, trainer)
    return bpe


def build_tiny_vlm(folder: str | os.PathLike[str], *, family: str = "qwen2-vl", seed: int = 0,
                   vocab_size: int = 400) -> Path:
    """Write a tiny random vision-language model (see the module docstring) to ``folder`` and return it.

    Args:
        folder: output folder (created; existing files are overwritten).
        family: ``qwen2-vl`` (default) or ``llava``.
        seed: ``torch.manual_seed`` of the random weights.
        vocab_size: BPE vocabulary size (>= 300: the 256 byte symbols, the special tokens and merges).

    Raises:
        ValueError: an unknown family. ImportError: torch, transformers or tokenizers missing.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    if family == "llava":
        return _build_llava(out, seed, vocab_size)
    from transformers import (PreTrainedTokenizerFast, Qwen2VLConfig, Qwen2VLForConditionalGeneration,
                              Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor)

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=_bpe(SPECIAL_TOKENS, vocab_size), eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    image_processor = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64)
    processor = Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=Qwen2VLVideoProcessor(), chat_template=CHAT_TEMPLATE)
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "max_position_embeddings": 8192,
                     "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]},
                     "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
                     "bos_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_chans": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    return _save_random_model(Qwen2VLForConditionalGeneration, config, processor, out, seed,
                              eos=ids["<|im_end|>"], pad=ids["<|endoftext|>"])


def _save_random_model(model_class: Any, config: Any, processor: Any, out: Path, seed: int, *, eos: int,
                       pad: int) -> Path:
    """A ``model_class(config)`` with random weights (``torch.manual_seed(seed)`` first), generating up to
    token ``eos`` and padding with ``pad``, saved with ``processor`` to the folder ``out``; returns ``out``."""
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _build_llava(out: Path, seed: int, vocab_size: int) -> Path:
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast)

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=_bpe(LLAVA_SPECIAL_TOKENS, vocab_size), bos_token="<s>",
                                        eos_token="</s>", unk_token="<unk>", pad_token="<pad>")
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in LLAVA_SPECIAL_TOKENS}
    image_processor = CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=14,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=LLAVA_CHAT_TEMPLATE)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                       image_size=28, patch_size=14, projection_dim=32),
        text_config=LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                                bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"]),
        image_token_index=ids["<image>"], vision_feature_select_strategy="default", vision_feature_layer=-1)
    return _save_random_model(LlavaForConditionalGeneration, config, processor, out, seed,
                              eos=ids["</s>"], pad=ids["<pad>"])


__all__ = ["CHAT_TEMPLATE", "FAMILIES", "LLAVA_CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_tiny_vlm"]
