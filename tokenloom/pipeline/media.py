"""Images in a chat request: from the client's URL or base64 to tokens the engine can place, or a 400.

Adapters make `ImagePart`s with `image_from_url` / `image_from_base64`; `prepare_images` fetches remote
URLs (only when allowed), checks each image's header before anything decodes it, and tokenizes it through
the engine's projector. Errors name the client's own field (`messages[0].content[1]`, `input[0].content[2]`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import urllib.request
from typing import Any

from PIL import Image

from tokenloom.engine.media import MediaProjector
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.image_probe import ImageRejected, probe_image
from tokenloom.pipeline.request import ChatRequest, ImagePart, Message

MAX_IMAGE_BYTES = 20 * 1024 * 1024
FETCH_TIMEOUT = 10.0  # seconds for one remote image
NO_PROJECTOR = "images need a vision projector (--mmproj), and this server has none loaded"


class MediaError(InvalidRequest):
    """A bad image; `param` is already the client's own field, so adapters do not rename it."""

    names_own_field = True


def image_from_url(url: str, field: str, *, media_type: str | None = None) -> ImagePart:
    """A `data:` URI becomes bytes now; an http(s) URL is kept to fetch later (if allowed)."""
    if url.startswith("data:"):
        header, comma, payload = url.partition(",")
        if not comma or not header.endswith(";base64"):
            raise MediaError(f"{field}: a data URI must be base64 (data:image/png;base64,...)", param=field)
        declared = header[len("data:") : -len(";base64")] or None
        return image_from_base64(payload, field, media_type=declared)
    if url.startswith(("http://", "https://")):
        return ImagePart(url=url, media_type=media_type, field=field)
    raise MediaError(f"{field}: an image URL must be a data: URI or http(s)", param=field)


def image_from_base64(payload: str, field: str, *, media_type: str | None = None) -> ImagePart:
    if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise MediaError(f"{field}: the image is over {MAX_IMAGE_BYTES // 2**20} MiB", param=field)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"{field}: the image is not valid base64 ({exc})", param=field) from exc
    return ImagePart(data=data, media_type=media_type, field=field)


def request_images(request: ChatRequest) -> list[ImagePart]:
    return [image for message in request.messages for image in message.images()]


def prepare_images(request: ChatRequest, projector: MediaProjector | None, allow_remote: bool) -> ChatRequest:
    """The request with every image fetched, checked and tokenized (`ImagePart.prepared` set)."""
    if not request_images(request):
        return request
    memo: dict[bytes, Any] = {}  # the same image twice in one request is tokenized once

    def prepared(part: ImagePart) -> ImagePart:
        if projector is None:
            raise MediaError(f"{part.field}: {NO_PROJECTOR}", param=part.field)
        data = part.data if not part.url else _fetch(part, allow_remote)
        try:
            header = probe_image(data, part.media_type)
        except ImageRejected as exc:
            raise MediaError(f"{part.field}: {exc}", param=part.field) from exc
        if data not in memo:
            rgb = _webp_pixels(data, part.field) if header.kind == "webp" else None
            try:
                memo[data] = projector.image_tokens(data, rgb)
            except InvalidRequest as exc:
                raise MediaError(f"{part.field}: {exc.message}", param=part.field) from exc
        return dataclasses.replace(part, data=data, prepared=memo[data])

    messages = tuple(_with_parts(message, prepared) for message in request.messages)
    return dataclasses.replace(request, messages=messages)


def _with_parts(message: Message, prepared: Any) -> Message:
    if not message.images():
        return message
    assert isinstance(message.content, tuple)
    parts = tuple(prepared(part) if isinstance(part, ImagePart) else part for part in message.content)
    return dataclasses.replace(message, content=parts)


def _fetch(part: ImagePart, allow_remote: bool) -> bytes:
    """A remote image, read up to the size limit; refused unless the server allows remote media."""
    if not allow_remote:
        raise MediaError(
            f"{part.field}: remote image URLs are refused (this server fetches none unless started with "
            "--allow-remote-media); send the image as a data: URI",
            param=part.field,
        )
    try:
        with urllib.request.urlopen(part.url, timeout=FETCH_TIMEOUT) as reply:
            data = bytes(reply.read(MAX_IMAGE_BYTES + 1))
    except (OSError, ValueError) as exc:
        raise MediaError(f"{part.field}: the image could not be fetched ({exc})", param=part.field) from exc
    if len(data) > MAX_IMAGE_BYTES:
        raise MediaError(f"{part.field}: the image is over {MAX_IMAGE_BYTES // 2**20} MiB", param=part.field)
    return data


def _webp_pixels(data: bytes, field: str) -> tuple[int, int, bytes]:
    """WebP decoded to RGB with Pillow (llama.cpp's decoder reads PNG and JPEG, not WebP)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            rgb = image.convert("RGB")
            return rgb.width, rgb.height, rgb.tobytes()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise MediaError(f"{field}: the WebP image could not be decoded ({exc})", param=field) from exc
