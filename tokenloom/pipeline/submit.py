"""`Pipeline.submit(ChatRequest) -> Submission`: the one path from a request to a stream of Events.

Renders the prompt once through the model's `ChatFormat`, compiles the constraint off the event loop,
queues the job on the engine and turns its pieces into Events through the format's output parser.
Errors name request parts in chat-completions terms; the API adapter renames them for its client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenloom import grammar as g
from tokenloom.constrain import check_spec
from tokenloom.constrain import compile as compile_constraint
from tokenloom.constrain.constraint import Constraint
from tokenloom.engine.engine import Engine
from tokenloom.engine.jobs import Done, JobHandle, LogitMask, Piece
from tokenloom.engine.sampling import SamplingParams
from tokenloom.errors import ContextOverflow, EngineError, GrammarError
from tokenloom.events import Event, Finish, OutputParser, Usage
from tokenloom.parsing.stream.plain import PlainOutputParser
from tokenloom.pipeline.budget import ReasoningBudget
from tokenloom.pipeline.chat_format import ChatFormat, PrefixPolicy, Prompt
from tokenloom.pipeline.media import MediaError, prepare_images, request_images
from tokenloom.pipeline.request import ChatRequest, Message


class Observer(Protocol):
    """Where latency and token counts go (the server's metrics)."""

    def first_token(self, seconds: float) -> None: ...

    def next_token(self, seconds: float) -> None: ...

    def finished(self, usage: Usage) -> None: ...


@dataclass(slots=True)
class Submission:
    """A queued request: its Events (ending with Finish), its prompt, and what its constraint leaves out."""

    handle: JobHandle
    parser: OutputParser
    prompt: Prompt
    unenforced: frozenset[str] = frozenset()  # schema keywords accepted but not enforced (e.g. "contains")
    observer: Observer | None = None
    started: float = field(default_factory=time.monotonic)

    def cancel(self) -> None:
        """Free the slot (a no-op once the job finished)."""
        self.handle.cancel()

    async def events(self) -> AsyncIterator[Event]:
        """Engine pieces -> parser events, ending with Finish; an engine failure raises EngineError."""
        last: float | None = None
        parser = self.parser
        async for item in self.handle.events():
            if isinstance(item, Piece):
                if self.observer is not None:
                    now = time.monotonic()
                    if last is None:
                        self.observer.first_token(now - self.started)
                    else:
                        self.observer.next_token(now - last)
                    last = now
                for event in parser.feed(item.text):
                    yield event
            elif isinstance(item, Done):
                for event in parser.finish():
                    yield event
                usage = Usage(item.prompt_tokens, item.completion_tokens, item.cached_tokens)
                if self.observer is not None:
                    self.observer.finished(usage)
                if item.finish_reason == "error" and item.error_code == "constraint_timeout":
                    raise GrammarError(
                        item.error or "the output constraint took too long", code=item.error_code
                    )
                if item.finish_reason == "error":
                    raise EngineError(item.error or "generation failed")
                reason = item.finish_reason
                if reason == "stop" and parser.message().tool_calls:
                    reason = "tool_calls"
                yield Finish(reason, usage, item.stop_sequence)


@dataclass(slots=True)
class Pipeline:
    """The served model's engine and chat format, and the KV-prefix policy of seed 003's cache modes."""

    engine: Engine
    chat_format: ChatFormat
    policy: PrefixPolicy = field(default_factory=PrefixPolicy)
    observer: Observer | None = None
    cached_system: Message | None = None  # --system-prompt-cache: the system message in sequence 0
    allow_remote_media: bool = False  # --allow-remote-media: fetch http(s) image URLs
    _longest_piece: int = 0  # bytes of the vocabulary's longest token, found on first need

    async def submit(self, request: ChatRequest) -> Submission:
        """Render, constrain and queue one chat request (InvalidRequest, ContextOverflow or Overloaded
        before anything is queued when it cannot run)."""
        request = self._with_cached_system(request)
        await asyncio.to_thread(self._check_size, request)
        request = await asyncio.to_thread(self._prepare_images, request)
        prompt = await asyncio.to_thread(self.chat_format.prompt, request, self.policy)
        if prompt.cache_prefix_len and self.policy.mode == "system":
            self.cached_system = request.messages[0]
        constraint = await asyncio.to_thread(self._compile, request, prompt)
        unenforced = constraint.unenforced if constraint is not None else frozenset()
        mask: LogitMask | None = constraint
        budget = request.reasoning.budget_tokens
        markers = self.chat_format.reasoning_markers(request, prompt) if budget is not None else None
        if budget is not None and markers is not None:
            end_tokens = self.chat_format.tokenizer.tokenize(markers.end, parse_special=True)
            mask = ReasoningBudget(constraint, self.engine.vocab, markers, end_tokens, budget)
        params = request.sampling
        if self.chat_format.stops():
            params = dataclasses.replace(params, stop=params.stop + self.chat_format.stops())
        handle = self._queue(prompt.tokens, params, mask, prompt.cache_prefix_len, "messages", prompt.images)
        parser = self.chat_format.output_parser(request, prompt)
        return Submission(handle, parser, prompt, unenforced, self.observer)

    async def submit_text(self, prompt: str | list[int], sampling: SamplingParams) -> Submission:
        """A raw completion: the prompt as text (special tokens parsed) or token ids; output is content."""
        if isinstance(prompt, str):
            tokens = await asyncio.to_thread(self.chat_format.tokenize_text, prompt)
            text = prompt
        else:
            tokens, text = list(prompt), ""
        handle = self._queue(tokens, sampling, None, 0, "prompt")
        return Submission(handle, PlainOutputParser(), Prompt(text, tokens, text), observer=self.observer)

    def count_tokens(self, request: ChatRequest) -> int:
        """How many tokens the request's prompt is (nothing is queued)."""
        return len(self.chat_format.prompt(self._prepare_images(request), PrefixPolicy()).tokens)

    def _prepare_images(self, request: ChatRequest) -> ChatRequest:
        """Images fetched (if allowed), checked and tokenized; a 400 naming the part when one is bad."""
        images = request_images(request)
        if images and not self.chat_format.accepts_images:
            where = images[0].field
            raise MediaError(f"{where}: this model's chat format takes no images", param=where)
        return prepare_images(request, self.engine.media, self.allow_remote_media)

    def _queue(
        self,
        tokens: list[int],
        params: SamplingParams,
        constraint: LogitMask | None,
        cache_prefix_len: int,
        prompt_field: str,
        images: dict[int, Any] | None = None,
    ) -> JobHandle:
        try:
            return self.engine.submit(
                tokens,
                params,
                constraint=constraint,
                cache_prefix_len=cache_prefix_len,
                images=images,
            )
        except ContextOverflow as exc:
            exc.param = exc.param or prompt_field
            raise

    def _compile(self, request: ChatRequest, prompt: Prompt) -> Constraint | None:
        """The request's constraint, compiled (tool schemas checked one by one first, so a bad schema is
        named at its own path)."""
        for index, tool in enumerate(request.offered_tools):
            source = f"tools[{index}].function.parameters"
            check_spec(g.Constrained(g.JsonSchemaSpec.of(tool.parameters), source))
        spec = self.chat_format.constraint(request, prompt)
        return None if spec is None else compile_constraint(spec, self.engine.vocab)

    def _check_size(self, request: ChatRequest) -> None:
        """A conversation whose text alone cannot fit the context is refused before rendering, counting
        its tokens (a lower bound: the template adds more), so a huge prompt is a clear ContextOverflow,
        never a render-size error."""
        limit = self.engine.n_ctx_slot
        if not self._longest_piece:
            self._longest_piece = max(len(piece) for piece in self.engine.vocab.pieces)
        texts = [message.text() for message in request.messages]
        if sum(len(text) for text in texts) <= limit * self._longest_piece:
            return  # even the longest tokens could not make it overflow: the engine checks exactly
        tokens = sum(len(self.chat_format.tokenizer.tokenize(text, parse_special=False)) for text in texts)
        if tokens >= limit:
            raise ContextOverflow(
                f"the prompt has at least {tokens} tokens but a request may use at most {limit} tokens "
                "(prompt + output) on this server",
                param="messages",
            )

    def _with_cached_system(self, request: ChatRequest) -> ChatRequest:
        """seed 003: clients that send the system prompt once keep getting it from the cache."""
        cached = self.cached_system
        if self.policy.mode != "system" or cached is None:
            return request
        if any(message.role in ("system", "developer") for message in request.messages):
            return request
        return dataclasses.replace(request, messages=(cached, *request.messages))
