"""OpenAI Responses API: `POST /v1/responses` (streamed with semantic events, or one response object),
`GET` and `DELETE /v1/responses/{id}` over a bounded in-memory store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tokenloom.errors import TokenloomError
from tokenloom.events import Event, Finish
from tokenloom.pipeline.request import Message
from tokenloom.server.adapt_responses import chat_request, output_message, rename
from tokenloom.server.encode_responses import ResponseBuilder, new_id
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.params import fields_named
from tokenloom.server.responding import collected, stream_frames, unenforced_headers
from tokenloom.server.responses_store import ResponseStore
from tokenloom.server.sse import sse_event
from tokenloom.server.state import ServerState
from tokenloom.server.wire_responses import NamedFunction, ResponsesRequest

router = APIRouter()


class ResponseNotFound(TokenloomError):
    """No stored response has this id (never stored, expired, or deleted)."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


def _store(request: Request) -> ResponseStore:
    app_state = request.app.state
    store: ResponseStore | None = getattr(app_state, "responses", None)
    if store is None:
        store = app_state.responses = ResponseStore()
    return store


def _echo(body: ResponsesRequest) -> dict[str, Any]:
    """The request fields a response object repeats."""
    text = (
        body.text.model_dump(by_alias=True, exclude_none=True) if body.text else {"format": {"type": "text"}}
    )
    return {
        "instructions": body.instructions,
        "max_output_tokens": body.max_output_tokens,
        "parallel_tool_calls": body.parallel_tool_calls if body.parallel_tool_calls is not None else True,
        "previous_response_id": body.previous_response_id,
        "reasoning": body.reasoning.model_dump() if body.reasoning else {"effort": None, "summary": None},
        "store": body.store,
        "temperature": body.temperature,
        "text": text,
        "tool_choice": _tool_choice(body),
        "tools": [tool.model_dump(exclude_none=True) for tool in body.tools or []],
        "top_p": body.top_p,
        "truncation": "disabled",
        "user": body.user,
        "metadata": body.metadata or {},
    }


def _tool_choice(body: ResponsesRequest) -> Any:
    choice = body.tool_choice
    return choice.model_dump() if isinstance(choice, NamedFunction) else choice or "auto"


@router.post("/v1/responses")
async def create_response(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    body = validate_body(ResponsesRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    store = _store(request)
    history: tuple[Message, ...] = ()
    if body.previous_response_id is not None:
        previous = store.get(body.previous_response_id)
        if previous is None:
            raise ResponseNotFound(
                f"previous_response_id: no stored response {body.previous_response_id!r}",
                param="previous_response_id",
            )
        history = previous.conversation
    with fields_named(rename):
        chat = chat_request(body, history, pipeline.engine.n_vocab)
        submission = await pipeline.submit(chat)
    builder = ResponseBuilder(new_id("resp"), state.model_id, _echo(body))

    def remember() -> None:
        """A finished response is stored with its conversation, for GET and previous_response_id."""
        if body.store and builder.status in ("completed", "incomplete"):
            asked = chat.messages[1:] if body.instructions else chat.messages
            conversation = (*asked, output_message(submission.parser.message()))
            store.put(builder.response_id, builder.response(), conversation)

    if body.stream:

        def encode(event: Event) -> list[bytes]:
            out = [sse_event(e["type"], e) for e in builder.encode(event)]
            if isinstance(event, Finish):
                remember()
            return out

        frames = stream_frames(
            submission,
            opening=lambda: [sse_event(e["type"], e) for e in builder.opening()],
            encode=encode,
            failed=lambda exc: [
                sse_event(e["type"], e) for e in builder.failed(exc.message, exc.code or exc.type)
            ],
        )
        return StreamingResponse(
            frames, media_type="text/event-stream", headers=unenforced_headers(submission)
        )

    def add(event: Event) -> None:
        builder.encode(event)

    def finished() -> dict[str, Any]:
        remember()
        return builder.response()

    return await collected(request, submission, add, finished, unenforced_headers(submission))


@router.get("/v1/responses/{response_id}")
async def get_response(request: Request, response_id: str) -> Response:
    stored = _store(request).get(response_id)
    if stored is None:
        raise ResponseNotFound(f"no stored response {response_id!r}", param="response_id")
    return JSONResponse(stored.body)


@router.delete("/v1/responses/{response_id}")
async def delete_response(request: Request, response_id: str) -> Response:
    if not _store(request).delete(response_id):
        raise ResponseNotFound(f"no stored response {response_id!r}", param="response_id")
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})
