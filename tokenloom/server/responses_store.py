"""Stored responses for `previous_response_id`, `GET` and `DELETE /v1/responses/{id}`: bounded in count
and age (oldest dropped first), kept in memory only."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tokenloom.pipeline.request import Message

MAX_RESPONSES = 256
MAX_AGE_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A finished response and the conversation it ended (its input, then its output as one message)."""

    body: dict[str, Any]
    conversation: tuple[Message, ...]
    stored_at: float


class ResponseStore:
    """At most `max_items` responses, none older than `max_age` seconds."""

    def __init__(self, max_items: int = MAX_RESPONSES, max_age: float = MAX_AGE_SECONDS) -> None:
        self.max_items = max_items
        self.max_age = max_age
        self._items: OrderedDict[str, StoredResponse] = OrderedDict()

    def put(self, response_id: str, body: dict[str, Any], conversation: tuple[Message, ...]) -> None:
        self._items[response_id] = StoredResponse(body, conversation, time.monotonic())
        self._items.move_to_end(response_id)
        self._expire()

    def get(self, response_id: str) -> StoredResponse | None:
        self._expire()
        return self._items.get(response_id)

    def delete(self, response_id: str) -> bool:
        return self._items.pop(response_id, None) is not None

    def _expire(self) -> None:
        deadline = time.monotonic() - self.max_age
        while self._items:
            oldest = next(iter(self._items.values()))
            if len(self._items) <= self.max_items and oldest.stored_at >= deadline:
                return
            self._items.popitem(last=False)
