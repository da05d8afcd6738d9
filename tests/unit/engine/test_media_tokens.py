"""Image placeholders: keyed by the image, cut only at whole images, kept out of text batches."""

from __future__ import annotations

import pytest

from tokenloom.engine.engine import _text_only
from tokenloom.engine.kvcache import plan_reuse
from tokenloom.engine.media_tokens import (
    image_key,
    is_placeholder,
    offset_in_image,
    placeholders,
    text_run,
    whole_images,
)
from tokenloom.engine.scheduler import BatchEntry, BatchPlan
from tokenloom.engine.slots import Slot


def test_placeholders_name_the_image_and_the_offset() -> None:
    red, blue = image_key(b"red image"), image_key(b"blue image")
    assert red != blue and image_key(b"red image") == red
    ids = placeholders(red, 5)
    assert all(is_placeholder(t) for t in ids) and len(set(ids)) == 5
    assert [offset_in_image(t) for t in ids] == [0, 1, 2, 3, 4]
    assert not set(ids) & set(placeholders(blue, 5))
    with pytest.raises(ValueError):
        placeholders(red, 0)


def test_a_prefix_never_ends_inside_an_image() -> None:
    prompt = [2, 10, 11, *placeholders(image_key(b"x"), 4), 12, 13]
    assert [whole_images(prompt, n) for n in range(len(prompt) + 1)] == [0, 1, 2, 3, 3, 3, 3, 7, 8, 9]


def test_reuse_stops_at_the_start_of_an_image_that_differs() -> None:
    first = [2, 10, 11, *placeholders(image_key(b"x"), 4), 12, 13]
    second = [2, 10, 11, *placeholders(image_key(b"y"), 4), 12, 13]
    slot = Slot(slot_id=0, seq_id=1, cached=list(first))
    assert plan_reuse(slot, second, [slot]).keep == 3  # the text before the image
    assert plan_reuse(slot, list(first), [slot]).keep == len(first) - 1  # the same image: all of it
    half = Slot(slot_id=1, seq_id=2, cached=first[:5])  # a cache cut inside the image (never kept whole)
    assert plan_reuse(half, list(first), [half]).keep == 3


def test_text_batches_stop_before_an_image() -> None:
    slot = Slot(slot_id=0, seq_id=1)
    tokens = [2, 10, *placeholders(image_key(b"x"), 3), 12]
    assert text_run(tokens, len(tokens)) == 2
    plan = _text_only(BatchPlan([BatchEntry(slot, tokens, 0, True)]))
    assert [(e.tokens, e.wants_logits) for e in plan.entries] == [([2, 10], False)]
    starts_with_image = _text_only(BatchPlan([BatchEntry(slot, tokens[2:], 2, True)]))
    assert starts_with_image.entries == []
