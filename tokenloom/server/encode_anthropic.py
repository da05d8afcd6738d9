"""Events -> Anthropic Messages content blocks, as stream events and as one message object.

One builder serves both, so streamed and non-streamed answers agree by construction: reasoning becomes a
`thinking` block (with a `signature`, a digest of its text: clients send it back and we need nothing from
it), content a `text` block, each tool call a `tool_use` block whose `input_json_delta` fragments join to
its final input.
"""

from __future__ import annotations

import base64
import hashlib
import json
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

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    499: "invalid_request_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def anthropic_error(message: str, status: int) -> dict[str, Any]:
    """Anthropic's error object for an HTTP status."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def signature_of(thinking: str) -> str:
    return base64.b64encode(hashlib.sha256(thinking.encode("utf-8", "surrogatepass")).digest()).decode()


@dataclass(slots=True)
class _Block:
    index: int
    kind: str  # "thinking", "text" or "tool_use"
    body: dict[str, Any]
    text: list[str] = field(default_factory=list)


@dataclass(slots=True)
class MessageBuilder:
    """Builds one assistant message from Events; `stop_sequences` are the request's own."""

    model: str
    stop_sequences: tuple[str, ...] = ()
    message_id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex}")
    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: Usage = field(default_factory=Usage)
    parse_errors: list[str] = field(default_factory=list)
    _open: _Block | None = None

    def opening(self, input_tokens: int) -> list[dict[str, Any]]:
        start = self._message(content=[], usage={"input_tokens": input_tokens, "output_tokens": 0})
        return [{"type": "message_start", "message": start}]

    def encode(self, event: Event) -> list[dict[str, Any]]:
        """The stream events one Event adds (and the blocks it adds to the collected message)."""
        if isinstance(event, ReasoningDelta) and event.text:
            return self._append("thinking", {"type": "thinking", "thinking": "", "signature": ""}, event.text)
        if isinstance(event, ContentDelta) and event.text:
            return self._append("text", {"type": "text", "text": ""}, event.text)
        if isinstance(event, ToolCallStart):
            out = self._close()
            body = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            return out + self._start("tool_use", body)
        if isinstance(event, ToolCallArgsDelta) and self._open is not None and event.text:
            self._open.text.append(event.text)
            delta = {"type": "input_json_delta", "partial_json": event.text}
            return [{"type": "content_block_delta", "index": self._open.index, "delta": delta}]
        if isinstance(event, ToolCallEnd):
            return self._close()
        if isinstance(event, ParseError):
            self.parse_errors.append(event.message)
            return []
        if isinstance(event, Finish):
            return self._finish(event)
        return []

    def _append(self, kind: str, start: dict[str, Any], text: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self._open is None or self._open.kind != kind:
            out = self._close() + self._start(kind, start)
        assert self._open is not None
        self._open.text.append(text)
        key, delta_type = ("thinking", "thinking_delta") if kind == "thinking" else ("text", "text_delta")
        out.append(
            {
                "type": "content_block_delta",
                "index": self._open.index,
                "delta": {"type": delta_type, key: text},
            }
        )
        return out

    def _start(self, kind: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        self._open = _Block(len(self.blocks), kind, body)
        self.blocks.append(dict(body))
        return [{"type": "content_block_start", "index": self._open.index, "content_block": body}]

    def _close(self) -> list[dict[str, Any]]:
        block, self._open = self._open, None
        if block is None:
            return []
        text = "".join(block.text)
        out: list[dict[str, Any]] = []
        final = self.blocks[block.index]
        if block.kind == "thinking":
            signature = signature_of(text)
            final.update(thinking=text, signature=signature)
            delta = {"type": "signature_delta", "signature": signature}
            out.append({"type": "content_block_delta", "index": block.index, "delta": delta})
        elif block.kind == "text":
            final["text"] = text
        else:
            final["input"] = _input_object(text)
        out.append({"type": "content_block_stop", "index": block.index})
        return out

    def _finish(self, event: Finish) -> list[dict[str, Any]]:
        out = self._close()
        self.usage = event.usage
        if event.stop_sequence is not None and event.stop_sequence in self.stop_sequences:
            self.stop_reason, self.stop_sequence = "stop_sequence", event.stop_sequence
        else:
            self.stop_reason = STOP_REASONS.get(event.reason, "end_turn")
        delta = {"stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence}
        out.append({"type": "message_delta", "delta": delta, "usage": self._usage()})
        out.append({"type": "message_stop"})
        return out

    def _usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.usage.prompt_tokens - self.usage.cached_tokens,
            "output_tokens": self.usage.completion_tokens,
            "cache_read_input_tokens": self.usage.cached_tokens,
            "cache_creation_input_tokens": 0,
        }

    def _message(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": self.stop_sequence,
            "usage": self._usage(),
            **fields,
        }

    def message(self) -> dict[str, Any]:
        """The collected message: every block, the stop reason and the usage."""
        return self._message()

    def failed(self, message: str, status: int) -> list[dict[str, Any]]:
        """Stream events for a failure after the stream began: Anthropic's in-stream `error` event."""
        return [*self._close(), {"type": "error", "error": anthropic_error(message, status)["error"]}]


def _input_object(arguments: str) -> Any:
    """A tool call's arguments as the object `tool_use.input` holds; text that is not a JSON object (a
    call cut short) is kept under `_raw` so nothing the model wrote is lost."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}
