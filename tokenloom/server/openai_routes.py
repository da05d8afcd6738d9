"""OpenAI-compatible routes: chat completions, completions, models."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from typing import Any, NamedTuple

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tokenloom.engine.jobs import JobHandle
from tokenloom.errors import EngineError, InvalidRequest, TokenloomError
from tokenloom.events import ContentDelta, Event, Finish
from tokenloom.parsing.plain import PlainOutputParser
from tokenloom.server.constraints import build_constraint
from tokenloom.server.encode_openai import ChunkEncoder, ResponseCollector, usage_body
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.generation import events_of, sampling_params, until_done_or_disconnected
from tokenloom.server.sse import SSE_DONE, sse_data
from tokenloom.server.state import ServerState
from tokenloom.server.wire import ChatCompletionRequest, CompletionRequest

logger = logging.getLogger(__name__)
router = APIRouter()


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.tokenloom
    return state


@router.get("/v1/models")
async def list_models(request: Request) -> dict[str, Any]:
    state = _state(request)
    state.ready()
    return {
        "object": "list",
        "data": [{"id": state.model_id, "object": "model", "created": 0, "owned_by": "tokenloom"}],
    }


class Submitted(NamedTuple):
    """A chat request in the engine: its handle, rendered prompt and what its constraint leaves out."""

    handle: JobHandle
    prompt_text: str
    unenforced: frozenset[str]  # schema keywords accepted but not enforced (e.g. "contains")

    def headers(self) -> dict[str, str]:
        """`X-Tokenloom-Unenforced`: so a client knows its output may break those keywords."""
        return {UNENFORCED_HEADER: ", ".join(sorted(self.unenforced))} if self.unenforced else {}


UNENFORCED_HEADER = "X-Tokenloom-Unenforced"


async def submit_chat(state: ServerState, body: ChatCompletionRequest) -> Submitted:
    engine, chat_format = state.ready()
    cached_system = state.cached_system_message
    has_system = any(m.role in ("system", "developer") for m in body.messages)
    if state.config.cache_mode == "system" and cached_system is not None and not has_system:
        # seed 003: clients that send the system prompt once keep getting it from the cache
        body = body.model_copy(update={"messages": [cached_system, *body.messages]})
    text, prompt = await asyncio.to_thread(chat_format.prompt, body)
    cache_len = 0
    if state.config.cache_mode != "none":
        prefix_text = await asyncio.to_thread(
            chat_format.cacheable_prefix, body, state.config.cache_mode, text
        )
        if prefix_text is not None:
            prefix = chat_format.tokenize_prompt(prefix_text)
            shared = 0
            while shared < min(len(prefix), len(prompt)) and prefix[shared] == prompt[shared]:
                shared += 1
            if shared >= state.config.cache_min_tokens:
                cache_len = shared
                if state.config.cache_mode == "system":
                    state.cached_system_message = body.messages[0]
    params = sampling_params(body, engine.n_vocab, body.max_completion_tokens or body.max_tokens)
    if chat_format.extra_stops():
        params = dataclasses.replace(params, stop=params.stop + chat_format.extra_stops())
    constraint = await build_constraint(body, chat_format, engine.vocab)
    handle = engine.submit(prompt, params, constraint=constraint, cache_prefix_len=cache_len)
    return Submitted(handle, text, constraint.unenforced if constraint is not None else frozenset())


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    state = _state(request)
    body = validate_body(ChatCompletionRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    started = time.monotonic()
    submitted = await submit_chat(state, body)
    handle = submitted.handle
    _, chat_format = state.ready()
    parser = chat_format.output_parser(body, submitted.prompt_text)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    model = state.model_id
    events = events_of(handle, parser, state.metrics, started)
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        encoder = ChunkEncoder(completion_id, model, include_usage=include_usage)
        return StreamingResponse(
            _stream_chat(encoder, events, handle), media_type="text/event-stream", headers=submitted.headers()
        )

    async def collect() -> dict[str, Any]:
        collector = ResponseCollector()
        async for event in events:
            collector.add(event)
        return collector.response(completion_id, model)

    return await _collected(request, handle, collect(), submitted.headers())


async def _collected(
    request: Request,
    handle: JobHandle,
    collect: Coroutine[Any, Any, dict[str, Any]],
    headers: dict[str, str] | None = None,
) -> Response:
    """A non-streamed response: the collected body, or 499 once the client went away (the job is
    cancelled then, and on any failure)."""
    try:
        result = await until_done_or_disconnected(collect, request.is_disconnected, handle.cancel)
    except BaseException:
        handle.cancel()
        raise
    if result is None:
        return Response(status_code=499)
    return JSONResponse(result, headers=headers)


async def _stream_chat(
    encoder: ChunkEncoder, events: AsyncIterator[Event], handle: JobHandle
) -> AsyncIterator[bytes]:
    try:
        yield sse_data(encoder.opening())
        async for event in events:
            for chunk in encoder.encode(event):
                yield sse_data(chunk)
    except TokenloomError as exc:
        yield sse_data(encoder.error(exc.message, exc.type))
    finally:
        handle.cancel()  # no-op when finished; frees the slot when the client went away mid-stream
    yield SSE_DONE


@router.post("/v1/completions")
async def completions(request: Request) -> Response:
    state = _state(request)
    body = validate_body(CompletionRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    engine, chat_format = state.ready()
    if isinstance(body.prompt, str):
        prompt = await asyncio.to_thread(chat_format.tokenize_prompt, body.prompt)
    else:
        prompt = [int(t) for t in body.prompt]
        if max(prompt) >= engine.n_vocab:
            raise InvalidRequest(f"prompt token ids must be below {engine.n_vocab}", param="prompt")
    params = sampling_params(body, engine.n_vocab, body.max_tokens or 16)
    started = time.monotonic()
    handle = engine.submit(prompt, params)
    completion_id = f"cmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(text: str, finish: str | None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": state.model_id,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not None:
            out["usage"] = usage
        return out

    events = events_of(handle, PlainOutputParser(), state.metrics, started)
    if body.stream:

        async def stream() -> AsyncIterator[bytes]:
            try:
                async for event in events:
                    if isinstance(event, ContentDelta) and event.text:
                        yield sse_data(chunk(event.text, None))
                    elif isinstance(event, Finish):
                        yield sse_data(chunk("", event.reason, usage_body(event.usage)))
            except TokenloomError as exc:
                payload = chunk("", "error")
                payload["error"] = {"message": exc.message, "type": exc.type, "param": None, "code": None}
                yield sse_data(payload)
            finally:
                handle.cancel()
            yield SSE_DONE

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def collect() -> dict[str, Any]:
        parts: list[str] = []
        finish: Finish | None = None
        async for event in events:
            if isinstance(event, ContentDelta):
                parts.append(event.text)
            elif isinstance(event, Finish):
                finish = event
        if finish is None:
            raise EngineError("generation ended without a finish")
        return chunk("".join(parts), finish.reason, usage_body(finish.usage))

    return await _collected(request, handle, collect())
