"""Images through the real server: a tiny gemma3 projector the test writes (random weights), loaded by
llama.cpp's mtmd beside the default model. The answers mean nothing; the load, the image tokens in the
prompt, their KV reuse and the refusals are real."""

from __future__ import annotations

import base64
import http.server
import io
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import ollama
import openai
import pytest
from PIL import Image

from tests.ggufs import write_gemma3_projector
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

TIMEOUT = httpx.Timeout(120.0, connect=10.0)
QUESTION = "What is in this picture?"


def image_bytes(kind: str = "PNG", color: tuple[int, int, int] = (200, 30, 30), size: int = 40) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size + 8), color).save(buffer, kind)
    return buffer.getvalue()


def data_uri(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def user_turn(url: str, text: str = QUESTION) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
    }


def huge_png(side: int = 20_000) -> bytes:
    """A real, valid PNG of side x side black pixels: ~400 KB on the wire, 1.2 GB once decoded."""
    row = b"\x00" * (side * 3 + 1)
    packer = zlib.compressobj(9)
    body = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def projector(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("mmproj") / "tiny-gemma3-mmproj.gguf"
    return path, write_gemma3_projector(path)


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> ServerProcess:
    log = tmp_path_factory.mktemp("logs") / f"{name}.log"
    return ServerProcess(
        "--deterministic", "--parallel", "2", "--ctx-size", "1024", *flags, log_path=log
    ).start()


@pytest.fixture(scope="module")
def vision(tmp_path_factory: pytest.TempPathFactory, projector: tuple[Path, int]) -> Iterator[ServerProcess]:
    server = _start(tmp_path_factory, "vision", "--mmproj", str(projector[0]))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def vclient(vision: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=vision.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)


@pytest.fixture(scope="module")
def vhttp(vision: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vision.url, timeout=TIMEOUT) as c:
        yield c


def _chat(client: openai.OpenAI, messages: list[Any]) -> Any:
    return client.chat.completions.create(model="x", messages=messages, max_tokens=4, temperature=0)


def test_an_image_adds_its_tokens_to_the_prompt(vclient: openai.OpenAI, projector: tuple[Path, int]) -> None:
    _, n_image_tokens = projector
    text_only = _chat(vclient, [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}])
    with_image = _chat(vclient, [user_turn(data_uri(image_bytes()))])
    assert with_image.choices[0].finish_reason in ("stop", "length")
    added = with_image.usage.prompt_tokens - text_only.usage.prompt_tokens
    # the image's embeddings, Gemma 3's <start_of_image> and <end_of_image> around them, and the newline
    # Gemma's template writes between two content parts
    assert added == n_image_tokens + 2 + 1


def test_a_follow_up_turn_reuses_the_image_and_another_image_does_not(vclient: openai.OpenAI) -> None:
    first_turn = [user_turn(data_uri(image_bytes(color=(10, 200, 10))), "Describe the colours.")]
    first = _chat(vclient, first_turn)
    reply = first.choices[0].message.content or ""
    follow_up = [*first_turn, {"role": "assistant", "content": reply}, {"role": "user", "content": "And?"}]
    second = _chat(vclient, follow_up)
    details = second.usage.prompt_tokens_details
    assert details is not None and details.cached_tokens is not None
    # the whole first prompt (image included) came from the KV cache: the image was not encoded again
    assert details.cached_tokens >= first.usage.prompt_tokens - 1
    other = [user_turn(data_uri(image_bytes(color=(10, 10, 200))), "Describe the colours.")]
    third = _chat(vclient, other)
    cached = third.usage.prompt_tokens_details.cached_tokens
    # the same text but another image: the cached prefix ends where the images differ
    assert cached is not None and cached < first.usage.prompt_tokens - 16


@pytest.mark.parametrize(("kind", "media_type"), [("JPEG", "image/jpeg"), ("WEBP", "image/webp")])
def test_jpeg_and_webp_are_accepted(vclient: openai.OpenAI, kind: str, media_type: str) -> None:
    reply = _chat(vclient, [user_turn(data_uri(image_bytes(kind), media_type))])
    assert reply.usage.prompt_tokens > 16


def _gif() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, "GIF")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (data_uri(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64), "IHDR"),
        (
            data_uri(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x10\x00\x00\x00\x10" + b"junk" * 8),
            "decoded",
        ),
        (data_uri(b"not an image at all"), "not a PNG, JPEG or WebP"),
        (data_uri(_gif(), "image/jpeg"), "GIF"),
        ("data:image/png;base64,%%%not-base64", "base64"),
        ("http://127.0.0.1:9/picture.png", "--allow-remote-media"),
        ("ftp://127.0.0.1/picture.png", "data: URI or http(s)"),
    ],
)
def test_bad_images_are_a_400_naming_the_part(vhttp: httpx.Client, url: str, words: str) -> None:
    body = {"messages": [user_turn(url)], "max_tokens": 2}
    reply = vhttp.post("/v1/chat/completions", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == "messages[0].content[1]"
    assert words in error["message"]


def test_a_decompression_bomb_is_refused_from_its_header(vhttp: httpx.Client) -> None:
    bomb = huge_png()
    assert len(bomb) < 2_000_000
    reply = vhttp.post(
        "/v1/chat/completions", json={"messages": [user_turn(data_uri(bomb))], "max_tokens": 2}
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "messages[0].content[1]" and "20000 x 20000" in error["message"]
    assert vhttp.get("/health").status_code == 200  # and the server is still there


def test_no_projector_means_a_400_naming_the_part(http: httpx.Client) -> None:
    body = {"messages": [user_turn(data_uri(image_bytes()))], "max_tokens": 2}
    reply = http.post("/v1/chat/completions", json=body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "messages[0].content[1]" and "--mmproj" in error["message"]


def test_anthropic_image_blocks(vision: ServerProcess) -> None:
    client = anthropic.Anthropic(base_url=vision.url, api_key="x", max_retries=0, timeout=120)
    png = base64.b64encode(image_bytes()).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    reply = client.messages.create(
        model="x",
        max_tokens=3,
        messages=[{"role": "user", "content": [block, {"type": "text", "text": QUESTION}]}],
    )
    assert reply.usage.input_tokens > 16
    lying = {**block, "source": {**block["source"], "media_type": "image/webp"}}
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(
            model="x", max_tokens=3, system="Be brief.", messages=[{"role": "user", "content": [lying]}]
        )
    assert "messages[0].content[0]" in str(info.value) and "image/webp" in str(info.value)


def test_ollama_images(vision: ServerProcess) -> None:
    client = ollama.Client(host=vision.url, timeout=120)
    png = base64.b64encode(image_bytes()).decode()
    reply = client.chat(
        model="x",
        messages=[{"role": "user", "content": QUESTION, "images": [png]}],
        options={"num_predict": 3, "temperature": 0},
    )
    assert (reply.prompt_eval_count or 0) > 16
    with pytest.raises(ollama.ResponseError) as info:
        client.generate(model="x", prompt=QUESTION, images=[b"GIF89a...."])
    assert info.value.status_code == 400 and "images[0]" in str(info.value)


def test_responses_input_image(vclient: openai.OpenAI, vhttp: httpx.Client) -> None:
    content = [
        {"type": "input_text", "text": QUESTION},
        {"type": "input_image", "image_url": data_uri(image_bytes()), "detail": "auto"},
    ]
    reply = vclient.responses.create(
        model="x", input=[{"role": "user", "content": content}], max_output_tokens=3, temperature=0
    )
    assert reply.usage is not None and reply.usage.input_tokens > 16
    bad = [{"role": "user", "content": [{"type": "input_image", "image_url": "https://127.0.0.1:9/x.png"}]}]
    refused = vhttp.post("/v1/responses", json={"input": bad, "max_output_tokens": 3})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "input[0].content[0]"


class _OneImage(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        if self.path != "/picture.png":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def test_remote_images_are_fetched_only_when_allowed(
    tmp_path_factory: pytest.TempPathFactory, projector: tuple[Path, int]
) -> None:
    _OneImage.body = image_bytes()
    local = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OneImage)
    threading.Thread(target=local.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{local.server_address[1]}/picture.png"
    server = _start(tmp_path_factory, "remote", "--mmproj", str(projector[0]), "--allow-remote-media")
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
        fetched = _chat(client, [user_turn(url)])
        inline = _chat(client, [user_turn(data_uri(image_bytes()))])
        assert fetched.usage.prompt_tokens == inline.usage.prompt_tokens
        assert fetched.usage.prompt_tokens_details.cached_tokens == 0
        assert (
            inline.usage.prompt_tokens_details.cached_tokens == inline.usage.prompt_tokens - 1
        )  # same image
        with pytest.raises(openai.BadRequestError) as info:
            _chat(client, [user_turn(f"http://127.0.0.1:{local.server_address[1]}/missing")])
        assert "could not be fetched" in str(info.value)
    finally:
        server.stop()
        local.shutdown()


def test_images_and_text_at_the_same_time(vclient: openai.OpenAI, projector: tuple[Path, int]) -> None:
    """Different images in parallel slots, beside a text-only request: each prompt holds its own image."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(index: int) -> int:
        if index == 0:
            messages: list[Any] = [{"role": "user", "content": "Question 0: no picture."}]
        else:
            shade = (index * 60, 90, 20)
            messages = [user_turn(data_uri(image_bytes(color=shade)), f"Question {index}: what is this?")]
        return int(_chat(vclient, messages).usage.prompt_tokens)

    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(ask, range(4)))
    assert counts[1] == counts[2] == counts[3] > counts[0] + projector[1]
