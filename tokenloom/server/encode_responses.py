"""Events -> the Responses API's output items, as semantic stream events and as one response object.

One builder serves both: the collected response is what the stream's events add up to, so streamed and
non-streamed answers agree by construction. Every stream event carries a `sequence_number`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from tokenloom.events import (
    ContentDelta,
    Event,
    Finish,
    ParseError,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass(slots=True)
class _Open:
    """The output item being written: its index, kind and text so far."""

    index: int
    kind: str  # "message", "reasoning" or "function_call"
    item: dict[str, Any]
    text: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ResponseBuilder:
    """Builds one response from Events; `echo` holds the request fields the response object repeats."""

    response_id: str
    model: str
    echo: dict[str, Any]
    created_at: int = field(default_factory=lambda: int(time.time()))
    output: list[dict[str, Any]] = field(default_factory=list)
    status: str = "in_progress"
    usage: Usage | None = None
    error: dict[str, Any] | None = None
    incomplete_reason: str | None = None
    parse_errors: list[str] = field(default_factory=list)
    _open: _Open | None = None
    _sequence: int = 0

    # ---- stream events -------------------------------------------------------------------------------
    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def opening(self) -> list[dict[str, Any]]:
        snapshot = self.response()
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=snapshot),
        ]

    def encode(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, ContentDelta):
            return self._text("message", event.text) if event.text else []
        if isinstance(event, ReasoningDelta):
            return self._text("reasoning", event.text) if event.text else []
        if isinstance(event, ToolCallStart):
            out = self._close()
            item = {
                "type": "function_call",
                "id": new_id("fc"),
                "call_id": event.id,
                "name": event.name,
                "arguments": "",
                "status": "in_progress",
            }
            self._open = _Open(len(self.output), "function_call", item)
            self.output.append(item)
            out.append(self._event("response.output_item.added", output_index=self._open.index, item=item))
            return out
        if isinstance(event, ToolCallArgsDelta):
            current = self._open
            if current is None or current.kind != "function_call" or not event.text:
                return []
            current.text.append(event.text)
            item_id = current.item["id"]
            return [
                self._event(
                    "response.function_call_arguments.delta",
                    item_id=item_id,
                    output_index=current.index,
                    delta=event.text,
                )
            ]
        if isinstance(event, ToolCallEnd):
            return self._close()
        if isinstance(event, ParseError):
            self.parse_errors.append(event.message)  # its text already went out as message content
            return []
        return self._finish(event)

    def failed(self, message: str, code: str) -> list[dict[str, Any]]:
        out = self._close()
        self.status = "failed"
        self.error = {"code": code, "message": message}
        out.append(self._event("response.failed", response=self.response()))
        return out

    # ---- items ---------------------------------------------------------------------------------------
    def _text(self, kind: str, text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        current = self._open
        if current is None or current.kind != kind:
            out = self._close()
            current = self._open = self._start(kind)
            out.append(
                self._event("response.output_item.added", output_index=current.index, item=current.item)
            )
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=current.item["id"],
                    output_index=current.index,
                    content_index=0,
                    part=_part(kind, ""),
                )
            )
        current.text.append(text)
        name = "response.output_text.delta" if kind == "message" else "response.reasoning_text.delta"
        extra: dict[str, Any] = {"logprobs": []} if kind == "message" else {}
        out.append(
            self._event(
                name,
                item_id=current.item["id"],
                output_index=current.index,
                content_index=0,
                delta=text,
                **extra,
            )
        )
        return out

    def _start(self, kind: str) -> _Open:
        if kind == "message":
            item = {
                "type": "message",
                "id": new_id("msg"),
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
        else:
            item = {
                "type": "reasoning",
                "id": new_id("rs"),
                "summary": [],
                "content": [],
                "status": "in_progress",
            }
        self.output.append(item)
        return _Open(len(self.output) - 1, kind, item)

    def _close(self) -> list[dict[str, Any]]:
        current, self._open = self._open, None
        if current is None:
            return []
        item, index, text = current.item, current.index, "".join(current.text)
        item["status"] = "completed"
        out: list[dict[str, Any]] = []
        if current.kind == "function_call":
            item["arguments"] = text or "{}"
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            )
        else:
            part = _part(current.kind, text)
            item["content"] = [part]
            done = (
                "response.output_text.done" if current.kind == "message" else "response.reasoning_text.done"
            )
            extra: dict[str, Any] = {"logprobs": []} if current.kind == "message" else {}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            out.append(self._event(done, **ids, text=text, **extra))
            out.append(self._event("response.content_part.done", **ids, part=part))
        out.append(self._event("response.output_item.done", output_index=index, item=item))
        return out

    def _finish(self, finish: Finish) -> list[dict[str, Any]]:
        out = self._close()
        self.usage = finish.usage
        if finish.reason == "length":
            self.status, self.incomplete_reason = "incomplete", "max_output_tokens"
            out.append(self._event("response.incomplete", response=self.response()))
        else:
            self.status = "completed"
            out.append(self._event("response.completed", response=self.response()))
        return out

    # ---- the response object -------------------------------------------------------------------------
    def response(self) -> dict[str, Any]:
        usage = self.usage or Usage()
        body: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "error": self.error,
            "incomplete_details": {"reason": self.incomplete_reason} if self.incomplete_reason else None,
            "model": self.model,
            "output": [dict(item) for item in self.output],
            "usage": {
                "input_tokens": usage.prompt_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                "output_tokens": usage.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total_tokens,
            }
            if self.usage is not None
            else None,
            **self.echo,
        }
        return body


def _part(kind: str, text: str) -> dict[str, Any]:
    if kind == "message":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "reasoning_text", "text": text}
