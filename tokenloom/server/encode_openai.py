"""Events -> OpenAI chat.completion.chunk deltas (streaming) and one chat.completion (non-streaming).

Shapes follow OpenAI and seed 001: a call opens with index, id, type and name (arguments ""), then
argument fragments; reasoning goes out as `reasoning_content`; non-streaming responses carry
`extensions` with the reasoning and tool-call chunks.
"""

from __future__ import annotations

import time
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
from tokenloom.server.sse import TextFrame, sse_data


def usage_body(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


@dataclass(slots=True)
class ChunkEncoder:
    """Builds the chunks of one streamed chat completion."""

    completion_id: str
    model: str
    include_usage: bool = False
    created: int = field(default_factory=lambda: int(time.time()))
    _call_ids: dict[int, str] = field(default_factory=dict)
    _content_frame: TextFrame | None = None
    _reasoning_frame: TextFrame | None = None

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    def opening(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": ""})

    def frames(self, event: Event) -> list[bytes]:
        """`encode(event)` as SSE frames; a text delta (nearly every token) fills a frame rendered once."""
        if isinstance(event, ContentDelta) and event.text:
            if self._content_frame is None:
                self._content_frame = TextFrame.around(lambda text: self._chunk({"content": text}))
            return [self._content_frame.render(event.text)]
        if isinstance(event, ReasoningDelta) and event.text:
            if self._reasoning_frame is None:
                self._reasoning_frame = TextFrame.around(
                    lambda text: self._chunk({"reasoning_content": text})
                )
            return [self._reasoning_frame.render(event.text)]
        return [sse_data(chunk) for chunk in self.encode(event)]

    def encode(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, ContentDelta):
            return [self._chunk({"content": event.text})] if event.text else []
        if isinstance(event, ReasoningDelta):
            return [self._chunk({"reasoning_content": event.text})] if event.text else []
        if isinstance(event, ToolCallStart):
            self._call_ids[event.index] = event.id
            call = {
                "index": event.index,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
            return [self._chunk({"tool_calls": [call]})]
        if isinstance(event, ToolCallArgsDelta):
            if not event.text:
                return []
            return [
                self._chunk({"tool_calls": [{"index": event.index, "function": {"arguments": event.text}}]})
            ]
        if isinstance(event, Finish):
            out = [self._chunk({}, event.reason)]
            if self.include_usage:
                out.append(
                    {
                        "id": self.completion_id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": usage_body(event.usage),
                    }
                )
            return out
        return []  # ToolCallEnd has no OpenAI delta; a ParseError's text already went out as content

    def error(self, message: str, type_: str = "server_error", code: str | None = None) -> dict[str, Any]:
        return {**self._chunk({}, "error"), "error": stream_error(message, type_, code)}


def stream_error(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    """The `error` member of a chunk that ends a stream which failed after it started."""
    return {"message": message, "type": type_, "param": None, "code": code}


@dataclass(slots=True)
class ResponseCollector:
    """Collects events into one non-streaming chat.completion with `extensions`."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    tool_call_chunks: list[dict[str, Any]] = field(default_factory=list)
    parse_errors: list[dict[str, str]] = field(default_factory=list)
    finish: Finish | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, ContentDelta):
            self.content.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self.reasoning.append(event.text)
        elif isinstance(event, ToolCallStart):
            self.calls[event.index] = {"id": event.id, "name": event.name, "arguments": []}
            self.tool_call_chunks.append({"type": "start", "tool_call_id": event.id, "tool_name": event.name})
        elif isinstance(event, ToolCallArgsDelta):
            call = self.calls[event.index]
            call["arguments"].append(event.text)
            self.tool_call_chunks.append({"type": "args", "tool_call_id": call["id"], "delta": event.text})
        elif isinstance(event, ToolCallEnd):
            self.tool_call_chunks.append({"type": "end", "tool_call_id": self.calls[event.index]["id"]})
        elif isinstance(event, ParseError):
            self.parse_errors.append({"message": event.message, "type": event.kind})
        elif isinstance(event, Finish):
            self.finish = event

    def response(self, completion_id: str, model: str) -> dict[str, Any]:
        finish = self.finish or Finish("stop")
        tool_calls = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": "".join(call["arguments"])},
            }
            for _, call in sorted(self.calls.items())
        ]
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if not tool_calls and message["content"] is None:
            message["content"] = ""
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if tool_calls:
            message["tool_calls"] = tool_calls
        extensions: dict[str, Any] = {
            "reasoning_chunks": self.reasoning,
            "tool_call_chunks": self.tool_call_chunks,
        }
        if self.parse_errors:
            extensions["parse_errors"] = self.parse_errors
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish.reason}],
            "usage": usage_body(finish.usage),
            "extensions": extensions,
        }


@dataclass(slots=True)
class CompletionEncoder:
    """Events -> `text_completion` chunks (streaming) or one `text_completion` (collected)."""

    completion_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))
    text: list[str] = field(default_factory=list)
    finish: Finish | None = None
    _text_frame: TextFrame | None = None

    def chunk(self, text: str, finish: str | None, usage: Usage | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.completion_id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not None:
            out["usage"] = usage_body(usage)
        return out

    def frames(self, event: Event) -> list[bytes]:
        """`encode(event)` as SSE frames; a text delta (nearly every token) fills a frame rendered once."""
        if isinstance(event, ContentDelta) and event.text:
            if self._text_frame is None:
                self._text_frame = TextFrame.around(lambda text: self.chunk(text, None))
            return [self._text_frame.render(event.text)]
        return [sse_data(chunk) for chunk in self.encode(event)]

    def encode(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, ContentDelta) and event.text:
            return [self.chunk(event.text, None)]
        if isinstance(event, Finish):
            return [self.chunk("", event.reason, event.usage)]
        return []

    def error(self, message: str, type_: str = "server_error", code: str | None = None) -> dict[str, Any]:
        return {**self.chunk("", "error"), "error": stream_error(message, type_, code)}

    def add(self, event: Event) -> None:
        if isinstance(event, ContentDelta):
            self.text.append(event.text)
        elif isinstance(event, Finish):
            self.finish = event

    def response(self) -> dict[str, Any]:
        finish = self.finish or Finish("stop")
        return self.chunk("".join(self.text), finish.reason, finish.usage)
