"""Anthropic Messages API: `POST /v1/messages` (streamed as Anthropic's events, or one message) and
`POST /v1/messages/count_tokens`. Every error on these paths is in Anthropic's shape."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tokenloom.errors import Overloaded, TokenloomError
from tokenloom.events import Event
from tokenloom.server.adapt_anthropic import chat_request, conversation, count_request
from tokenloom.server.encode_anthropic import MessageBuilder, anthropic_error
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.params import fields_named
from tokenloom.server.responding import collected, errors_rendered_by, stream_frames, unenforced_headers
from tokenloom.server.sse import sse_event
from tokenloom.server.state import ServerState
from tokenloom.server.wire_anthropic import CountTokensRequest, MessagesRequest

router = APIRouter()
PING = {"type": "ping"}


def error_response(exc: TokenloomError) -> JSONResponse:
    """A TokenloomError in Anthropic's shape; the message names the field, as ours always start with it."""
    headers = {"retry-after": str(exc.retry_after)} if isinstance(exc, Overloaded) else None
    body = anthropic_error(exc.message_naming_param(), exc.status)
    return JSONResponse(body, status_code=exc.status, headers=headers)


def _frames(events: list[dict[str, Any]]) -> list[bytes]:
    return [sse_event(e["type"], e) for e in events]


@router.post("/v1/messages")
@errors_rendered_by(error_response)
async def create_message(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    body = validate_body(MessagesRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    chat = conversation(body)
    with fields_named(chat.rename):
        submission = await pipeline.submit(chat_request(body, chat, pipeline.engine.n_vocab))
    builder = MessageBuilder(state.model_id, tuple(body.stop_sequences or ()))
    headers = unenforced_headers(submission)
    if body.stream:
        frames = stream_frames(
            submission,
            opening=lambda: _frames([*builder.opening(len(submission.prompt.tokens)), PING]),
            encode=lambda event: _frames(builder.encode(event)),
            failed=lambda exc: _frames(builder.failed(exc.message, exc.status)),
            keepalive=lambda: _frames([PING]),
        )
        return StreamingResponse(frames, media_type="text/event-stream", headers=headers)

    def add(event: Event) -> None:
        builder.encode(event)

    return await collected(request, submission, add, builder.message, headers)


@router.post("/v1/messages/count_tokens")
@errors_rendered_by(error_response)
async def count_tokens(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    body = validate_body(CountTokensRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    chat = conversation(body)
    with fields_named(chat.rename):
        counted = count_request(body, chat, pipeline.engine.n_vocab)
        tokens = await asyncio.to_thread(pipeline.count_tokens, counted)
    return JSONResponse({"input_tokens": tokens})
