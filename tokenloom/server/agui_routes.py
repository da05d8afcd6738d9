"""The AG-UI endpoint: a RunAgentInput becomes a chat request on the same pipeline as
/v1/chat/completions, and its Events stream back as AG-UI events over SSE."""

from __future__ import annotations

from ag_ui.core import BaseEvent
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from tokenloom.errors import TokenloomError
from tokenloom.server.adapt_agui import chat_request, parse_run_input
from tokenloom.server.encode_agui import AguiEncoder
from tokenloom.server.errors import parse_json_body
from tokenloom.server.params import fields_named
from tokenloom.server.responding import stream_frames, unenforced_headers
from tokenloom.server.state import ServerState

router = APIRouter()


@router.post("/agui")
@router.post("/v1/agui")
async def run_agent(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    run = parse_run_input(parse_json_body(await request.body()))
    pipeline = state.ready()
    chat = chat_request(run, pipeline.engine.n_vocab)
    with fields_named(chat.rename):
        state.check_model(chat.model)
        submission = await pipeline.submit(chat.request)
    encoder = AguiEncoder(run.thread_id, run.run_id, state.model_id)
    sse = EventEncoder()

    def frames(events: list[BaseEvent]) -> list[bytes]:
        return [sse.encode(event).encode() for event in events]

    def failed(exc: TokenloomError) -> list[bytes]:
        return frames(encoder.error(exc.message, exc.code or exc.type))

    def closing() -> list[bytes]:
        if encoder.is_done:
            return []
        return frames(encoder.error("generation ended without a finish", "server_error"))

    stream = stream_frames(
        submission,
        opening=lambda: frames(encoder.opening()),
        encode=lambda event: frames(encoder.encode(event)),
        failed=failed,
        closing=closing,
    )
    return StreamingResponse(
        stream, media_type=sse.get_content_type(), headers=unenforced_headers(submission)
    )
