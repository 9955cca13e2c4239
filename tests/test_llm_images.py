"""Images in chat messages: content parts from paths / PIL images, validation and caps, text-only refusal,
and images arriving intact at a real local OpenAI-compatible server."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from clevr_poc.errors import FormatError  # noqa: E402
from clevr_poc.llm import images as llm_images  # noqa: E402
from clevr_poc.llm.base import (ImagesNotSupportedError, count_images, text_only_messages,  # noqa: E402
                                validate_messages)
from clevr_poc.llm.images import (ImageInputError, decode_image_url, image_part, text_part,  # noqa: E402
                                  user_message)

CLEVR_IMAGE = Path(__file__).parent / "fixtures" / "pipeline" / "image.png"


def _url(part: dict) -> str:
    return part["image_url"]["url"]


def test_a_png_file_is_sent_with_its_exact_bytes():
    part = image_part(CLEVR_IMAGE)
    assert part["type"] == "image_url" and _url(part).startswith("data:image/png;base64,")
    assert base64.b64decode(_url(part).split(",", 1)[1]) == CLEVR_IMAGE.read_bytes()
    decoded = decode_image_url(_url(part))
    assert (decoded.size, decoded.format, decoded.mime) == ((320, 240), "PNG", "image/png")


def test_pil_images_become_lossless_png_and_jpeg_files_keep_their_type(tmp_path):
    picture = Image.new("RGB", (7, 5), (10, 20, 30))
    picture.putpixel((3, 2), (250, 0, 5))
    decoded = decode_image_url(_url(image_part(picture)))
    assert decoded.mime == "image/png" and decoded.size == (7, 5)
    assert decoded.to_pil().getpixel((3, 2)) == (250, 0, 5) and decoded.to_pil().getpixel((0, 0)) == (10, 20, 30)
    jpeg = tmp_path / "photo.jpg"
    picture.save(jpeg, format="JPEG")
    assert _url(image_part(jpeg)).startswith("data:image/jpeg;base64,")
    bmp = tmp_path / "picture.bmp"
    picture.save(bmp, format="BMP")  # not an API format: re-encoded as PNG, same pixels
    assert decode_image_url(_url(image_part(bmp))).to_pil().getpixel((3, 2)) == (250, 0, 5)


def test_user_message_puts_images_before_the_text():
    assert user_message("hi") == {"role": "user", "content": "hi"}
    message = user_message("What colour?", [CLEVR_IMAGE])
    assert [p["type"] for p in message["content"]] == ["image_url", "text"]
    assert message["content"][1] == text_part("What colour?")


@pytest.mark.parametrize("url, match", [
    ("https://example.com/cat.png", "only data:image"),
    ("data:image/png;base64,@@@@", "not valid base64"),
    ("data:image/png;base64," + base64.b64encode(b"not an image at all").decode(), "cannot read the image"),
    ("data:image/png;base64,", "empty image"),
    (42, "must be a string"),
])
def test_bad_image_urls_are_typed_one_line_errors(url, match):
    with pytest.raises(ImageInputError, match=match) as info:
        validate_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}])
    assert "[0].content[0].image_url.url" in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, FormatError)


def test_size_caps_on_pixels_bytes_and_image_count(monkeypatch, tmp_path):
    monkeypatch.setattr(llm_images, "MAX_IMAGE_PIXELS", 320 * 240 - 1)
    with pytest.raises(ImageInputError, match="larger than 76799 pixels"):
        image_part(CLEVR_IMAGE)
    monkeypatch.setattr(llm_images, "MAX_IMAGE_PIXELS", 40_000_000)
    monkeypatch.setattr(llm_images, "MAX_IMAGE_BYTES", 1000)
    with pytest.raises(ImageInputError, match="larger than 1000 bytes"):
        image_part(CLEVR_IMAGE)
    monkeypatch.setattr(llm_images, "MAX_IMAGE_BYTES", 20 * 1024 * 1024)
    with pytest.raises(ImageInputError, match="not found"):
        image_part(tmp_path / "missing.png")
    part = image_part(Image.new("RGB", (2, 2)))
    too_many = [{"role": "user", "content": [part] * (llm_images.MAX_IMAGES_PER_REQUEST + 1)}]
    with pytest.raises(ImageInputError, match="more than 16 images"):
        validate_messages(too_many)


def test_validate_messages_normalises_parts_and_rejects_unknown_ones():
    part = image_part(CLEVR_IMAGE)
    checked = validate_messages([{"role": "user", "content": [part, {"type": "text", "text": "Q", "extra": 1}]}])
    assert checked[0]["content"][1] == {"type": "text", "text": "Q"} and count_images(checked) == 1
    with pytest.raises(FormatError, match="'text' or 'image_url'"):
        validate_messages([{"role": "user", "content": [{"type": "audio"}]}])
    with pytest.raises(FormatError, match="empty list"):
        validate_messages([{"role": "user", "content": []}])
    with pytest.raises(FormatError, match="string or a list"):
        validate_messages([{"role": "user", "content": 3}])


def test_text_only_backends_refuse_images_and_join_text_parts():
    joined = text_only_messages([{"role": "user", "content": [text_part("a"), text_part("b")]}], backend="x")
    assert joined == [{"role": "user", "content": "a\nb"}]
    with pytest.raises(ImagesNotSupportedError, match="text only and the request has 1 image"):
        text_only_messages([user_message("What colour?", [CLEVR_IMAGE])], backend="local-gguf")


def test_the_local_gguf_backend_refuses_images_before_loading(tmp_path):
    from clevr_poc.llm.local import LocalGGUFBackend

    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUF")  # never loaded: the image is refused first
    backend = LocalGGUFBackend(fake)
    assert backend.supports_images is False
    with pytest.raises(ImagesNotSupportedError):
        backend.complete([user_message("hi", [CLEVR_IMAGE])])


def test_images_arrive_intact_at_the_test_server_with_concurrency():
    pytest.importorskip("openai")
    from concurrent.futures import ThreadPoolExecutor

    from clevr_poc.llm.openai_backend import OpenAIChatBackend
    from clevr_poc.llm.testing import ChatCompletionsServer

    small = Image.new("RGB", (9, 4), (1, 2, 3))
    with ChatCompletionsServer(lambda messages: f"{len(messages[-1]['content'])} parts") as server:
        backend = OpenAIChatBackend(model="vlm", base_url=server.base_url, max_retries=0)
        prompts = [user_message(f"q{i}", [CLEVR_IMAGE, small]) for i in range(6)]
        with ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(lambda m: backend.complete([m]), prompts))
        assert replies == ["3 parts"] * 6 and backend.usage["requests"] == 6
        assert len(server.images) == 12 and all(image.decodable for image in server.images)
        assert sorted(image.size for image in server.images) == [(9, 4)] * 6 + [(320, 240)] * 6
        clevr = [image for image in server.images if image.size == (320, 240)]
        assert all(image.data == CLEVR_IMAGE.read_bytes() for image in clevr)
        tiny = next(image for image in server.images if image.size == (9, 4))
        assert tiny.pixels().getpixel((8, 3)) == (1, 2, 3)
        body = server.requests[0]["messages"][0]["content"]
        assert body[0]["type"] == "image_url" and body[2] == {"type": "text", "text": body[2]["text"]}


def test_the_test_server_records_an_undecodable_image():
    import json
    import urllib.request

    from clevr_poc.llm.testing import ChatCompletionsServer

    broken = "data:image/png;base64," + base64.b64encode(b"garbage").decode()
    body = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": broken}}, {"type": "text", "text": "hi"}]}]}
    with ChatCompletionsServer(lambda messages: "ok") as server:
        request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert json.load(answer)["choices"][0]["message"]["content"] == "ok"
    (image,) = server.images
    assert not image.decodable and image.data == b"garbage" and image.size is None


def test_make_backend_knows_the_transformers_spec():
    from clevr_poc.llm import make_backend

    pytest.importorskip("transformers")
    backend = make_backend("transformers:/no/such/model", device="cpu")
    assert backend.supports_images and backend.device == "cpu" and str(backend.dtype) == "torch.float32"
    with pytest.raises(FormatError, match="transformers:PATH_OR_HUB_ID"):
        make_backend("transformers:")
