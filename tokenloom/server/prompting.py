"""From a validated chat request to prompt tokens and an output parser, for the model's chat format.

The server's one place that knows which template a model uses and which parser reads its output.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.chat.render import render
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import InvalidRequest
from tokenloom.events import OutputParser
from tokenloom.harmony import STOP_STRINGS as HARMONY_STOPS
from tokenloom.harmony import (
    HarmonyOutputParser,
    render_chat_request_segments,
)
from tokenloom.parsing.plain import PlainOutputParser
from tokenloom.server.wire import ChatCompletionRequest, ChatMessage

logger = logging.getLogger(__name__)

CacheMode = Literal["none", "system", "first"]
ChatFormatKind = Literal["jinja", "harmony"]
RESERVED_TEMPLATE_VARS = frozenset(
    {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token", "documents", "functions"}
)


def message_to_template(message: ChatMessage) -> dict[str, Any]:
    """OpenAI message -> the dict HF templates read (tool-call arguments as objects when they parse)."""
    out: dict[str, Any] = {"role": message.role}
    if isinstance(message.content, list):
        out["content"] = [{"type": "text", "text": part.text} for part in message.content]
    else:
        out["content"] = message.content
    if message.name is not None:
        out["name"] = message.name
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.reasoning_content is not None:
        out["reasoning_content"] = message.reasoning_content
    if message.tool_calls:
        calls = []
        for call in message.tool_calls:
            try:
                arguments: Any = json.loads(call.function.arguments)
            except ValueError:
                arguments = call.function.arguments
            calls.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": arguments},
                }
            )
        out["tool_calls"] = calls
    return out


@dataclass(slots=True)
class ChatFormat:
    """The chat template of the served model and how to read what the model writes."""

    template: str
    template_source: str  # "gguf", "file" or "fallback"
    tokenizer: Tokenizer
    bos_token: str
    eos_token: str
    kind: ChatFormatKind = "jinja"

    @classmethod
    def for_model(
        cls,
        tokenizer: Tokenizer,
        gguf_template: str | None,
        override: Path | None,
        *,
        architecture: str = "",
        forced_kind: str = "auto",
    ) -> ChatFormat:
        if override is not None:
            template, source = override.read_text(encoding="utf-8"), "file"
        elif gguf_template:
            template, source = gguf_template, "gguf"
        else:
            template, source = GEMMA_TURNS, "fallback"
        bos = tokenizer.token_text(tokenizer.bos_id) if tokenizer.bos_id is not None else ""
        eos = tokenizer.token_text(tokenizer.eos_id) if tokenizer.eos_id is not None else ""
        return cls(
            template=template, template_source=source, tokenizer=tokenizer, bos_token=bos, eos_token=eos
        )

    def prompt(self, request: ChatCompletionRequest) -> tuple[str, list[int]]:
        """The prompt text and its tokens (harmony's special tokens are placed exactly, never parsed)."""
        if self.kind == "harmony":
            tokens: list[int] = []
            parts: list[str] = []
            for text, is_special in render_chat_request_segments(
                [m.model_dump(exclude_none=True) for m in request.messages], **self._harmony_options(request)
            ):
                parts.append(text)
                tokens.extend(self.tokenizer.tokenize(text, parse_special=is_special))
            return "".join(parts), tokens
        text = self.render(request)
        return text, self.tokenize_prompt(text)

    def _harmony_options(self, request: ChatCompletionRequest) -> dict[str, Any]:
        tools = [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else None
        response_format = (
            request.response_format.model_dump(exclude_none=True, by_alias=True)
            if request.response_format
            else None
        )
        return {
            "tools": None if request.tool_choice == "none" else tools,
            "reasoning_effort": request.reasoning_effort,
            "response_format": response_format,
        }

    def extra_stops(self) -> tuple[str, ...]:
        return HARMONY_STOPS if self.kind == "harmony" else ()

    def render(self, request: ChatCompletionRequest, *, add_generation_prompt: bool = True) -> str:
        kwargs = dict(request.chat_template_kwargs or {})
        for name in kwargs:
            if name in RESERVED_TEMPLATE_VARS:
                raise InvalidRequest(
                    f"chat_template_kwargs may not set the reserved variable {name!r}",
                    param=f"chat_template_kwargs.{name}",
                )
        if request.reasoning_effort is not None:
            kwargs.setdefault("reasoning_effort", request.reasoning_effort)
        tools = [tool.model_dump(exclude_none=True) for tool in request.tools] if request.tools else None
        if request.tool_choice == "none":
            tools = None
        return render(
            self.template,
            [message_to_template(m) for m in request.messages],
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            template_kwargs=kwargs,
        )

    def tokenize_prompt(self, text: str) -> list[int]:
        tokens = self.tokenizer.tokenize(text, add_bos=False, parse_special=True)
        bos = self.tokenizer.bos_id
        if self.tokenizer.adds_bos and bos is not None and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def cacheable_prefix(self, request: ChatCompletionRequest, mode: CacheMode, full_text: str) -> str | None:
        """The rendered text seed 003's cache modes keep in sequence 0: the first message, as rendered.

        Templates may fold a system prompt into the next turn, so the first message is rendered with a
        probe conversation after it and the prefix it shares with the real prompt is what can be cached.
        """
        if mode == "none" or not request.messages:
            return None
        first = request.messages[0]
        wanted = ("system", "developer") if mode == "system" else ("user",)
        if first.role not in wanted:
            return None
        probe = ChatMessage(role="user", content="\u2063probe\u2063")
        tail = (
            [probe]
            if mode == "system"
            else [ChatMessage(role="assistant", content="\u2063probe\u2063"), probe]
        )
        probed, _ = self.prompt(request.model_copy(update={"messages": [first, *tail]}))
        return os.path.commonprefix([probed, full_text]) or None  # noqa: RUF071 - text, not paths

    def output_parser(self, request: ChatCompletionRequest) -> OutputParser:
        if self.kind == "harmony":
            tools = [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else []
            return HarmonyOutputParser(tools=tools)
        return PlainOutputParser()
