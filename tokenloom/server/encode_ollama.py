"""Events -> Ollama's newline-delimited JSON objects (`/api/chat` and `/api/generate`), streamed or one.

Text and reasoning go out as they come; a tool call goes out whole once its arguments close (Ollama's
clients read `arguments` as an object). The last object carries `done: true`, `done_reason` and Ollama's
counts and durations in nanoseconds. The collected answer is what the stream adds up to.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def ndjson(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def arguments_object(text: str) -> dict[str, Any]:
    """A call's argument text as the object Ollama's clients expect; text that is not an object (a call
    cut short) is kept under `_raw`, so nothing the model wrote is lost."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": text}


@dataclass(slots=True)
class OllamaEncoder:
    """One answer; `kind` is "chat" (a `message`) or "generate" (a `response`)."""

    model: str
    kind: str
    started_ns: int = field(default_factory=time.monotonic_ns)
    first_ns: int | None = None
    content: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    _args: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    finish: Finish | None = None

    def _mark(self) -> None:
        if self.first_ns is None:
            self.first_ns = time.monotonic_ns()

    def _chunk(
        self, content: str = "", thinking: str | None = None, calls: list[Any] | None = None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "created_at": now_iso()}
        if self.kind == "chat":
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            if calls:
                message["tool_calls"] = calls
            out["message"] = message
        else:
            out["response"] = content
            if thinking:
                out["thinking"] = thinking
        out["done"] = False
        return out

    def encode(self, event: Event) -> list[dict[str, Any]]:
        """The stream objects one Event adds (and what it adds to the collected answer)."""
        if isinstance(event, ContentDelta) and event.text:
            self._mark()
            self.content.append(event.text)
            return [self._chunk(event.text)]
        if isinstance(event, ReasoningDelta) and event.text:
            self._mark()
            self.thinking.append(event.text)
            return [self._chunk(thinking=event.text)]
        if isinstance(event, ToolCallStart):
            self._mark()
            self._args[event.index] = (event.name, [])
        elif isinstance(event, ToolCallArgsDelta) and event.index in self._args:
            self._args[event.index][1].append(event.text)
        elif isinstance(event, ToolCallEnd) and event.index in self._args:
            name, parts = self._args.pop(event.index)
            call = {"function": {"name": name, "arguments": arguments_object("".join(parts))}}
            self.tool_calls.append(call)
            return [self._chunk(calls=[call])] if self.kind == "chat" else []
        elif isinstance(event, ParseError):
            self.parse_errors.append(event.message)
        elif isinstance(event, Finish):
            self.finish = event
            return [self.final(content="")]
        return []

    def final(
        self, content: str, thinking: str | None = None, calls: list[Any] | None = None
    ) -> dict[str, Any]:
        """The closing object: the given answer parts, `done`, `done_reason` and the statistics."""
        finish = self.finish or Finish("stop")
        out = self._chunk(content, thinking, calls)
        end = time.monotonic_ns()
        first = self.first_ns or end
        usage = finish.usage
        out.update(
            done=True,
            done_reason="length" if finish.reason == "length" else "stop",
            total_duration=end - self.started_ns,
            load_duration=0,
            prompt_eval_count=usage.prompt_tokens,
            prompt_eval_duration=first - self.started_ns,
            eval_count=usage.completion_tokens,
            eval_duration=end - first,
        )
        return out

    def add(self, event: Event) -> None:
        self.encode(event)

    def response(self) -> dict[str, Any]:
        """The collected answer (stream: false)."""
        return self.final("".join(self.content), "".join(self.thinking) or None, self.tool_calls or None)

    def error(self, message: str) -> dict[str, Any]:
        return {"error": message}
