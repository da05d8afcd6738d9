"""Image parts before any model: data URIs, base64, remote URLs, and errors that keep the client's field."""

from __future__ import annotations

import base64
import re

import pytest

from tokenloom.engine.sampling import SamplingParams
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.media import MediaError, image_from_base64, image_from_url, prepare_images
from tokenloom.pipeline.request import ChatRequest, ImagePart, Message, TextPart
from tokenloom.server.params import fields_named


def test_a_data_uri_becomes_bytes_and_its_declared_type() -> None:
    part = image_from_url("data:image/png;base64," + base64.b64encode(b"\x89PNG...").decode(), "f")
    assert part == ImagePart(data=b"\x89PNG...", media_type="image/png", field="f")
    assert image_from_url("https://127.0.0.1/x.png", "f").url == "https://127.0.0.1/x.png"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("data:image/png,rawbytes", "base64"),
        ("data:image/png;base64,@@@", "not valid base64"),
        ("file:///etc/passwd", "data: URI or http(s)"),
    ],
)
def test_bad_urls_name_the_part(url: str, words: str) -> None:
    with pytest.raises(MediaError, match=re.escape(words)) as info:
        image_from_url(url, "messages[3].content[2]")
    assert info.value.param == "messages[3].content[2]"


def test_images_without_a_projector_are_refused() -> None:
    def request(part: ImagePart) -> ChatRequest:
        return ChatRequest((Message("user", (TextPart("hi"), part)),), SamplingParams())

    with pytest.raises(MediaError, match="--mmproj"):
        prepare_images(request(image_from_base64("AAAA", "messages[0].content[1]")), None, False)
    text_only = ChatRequest((Message("user", "hi"),), SamplingParams())
    assert prepare_images(text_only, None, False) is text_only


def test_adapters_renames_leave_a_media_error_s_field_alone() -> None:
    with pytest.raises(InvalidRequest) as info, fields_named(lambda param: "renamed"):
        raise MediaError("messages[0].content[1]: bad", param="messages[0].content[1]")
    assert info.value.param == "messages[0].content[1]"
    with pytest.raises(InvalidRequest) as other, fields_named(lambda param: "renamed"):
        raise InvalidRequest("messages[0]: bad", param="messages[0]")
    assert other.value.param == "renamed"
