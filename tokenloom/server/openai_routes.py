"""OpenAI-compatible routes: chat completions, completions, models.

A route validates the wire body, adapts it to the pipeline's request, submits, and encodes the Events.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from tokenloom.errors import InvalidRequest
from tokenloom.pipeline import JinjaFormat, Pipeline
from tokenloom.server.adapt_openai import chat_request, sampling_params
from tokenloom.server.encode_openai import ChunkEncoder, CompletionEncoder, ResponseCollector
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.responding import collected, stream_frames, unenforced_headers
from tokenloom.server.sse import SSE_DONE, sse_data
from tokenloom.server.state import ServerState
from tokenloom.server.wire import ChatCompletionRequest, CompletionRequest

router = APIRouter()


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.tokenloom
    return state


@router.get("/v1/models")
async def list_models(request: Request) -> dict[str, Any]:
    state = _state(request)
    state.ready_model()
    names = [state.model_id, *(alias for alias in state.config.model_aliases if alias != state.model_id)]
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": "tokenloom"} for name in names],
    }


def request_template(body: ChatCompletionRequest) -> tuple[str | None, str]:
    """The request's own template and the field it came in: top-level `chat_template`, or (as some
    clients send it) `chat_template_kwargs.chat_template`."""
    if body.chat_template is not None:
        return body.chat_template, "chat_template"
    nested = (body.chat_template_kwargs or {}).get("chat_template")
    param = "chat_template_kwargs.chat_template"
    if nested is not None and not isinstance(nested, str):
        raise InvalidRequest(f"{param}: a chat template is a string", param=param)
    return nested, param


def pipeline_for(state: ServerState, template: str | None, param: str = "chat_template") -> Pipeline:
    """The server's pipeline, or one rendering with the request's own template when the operator allows
    request templates (`--allow-request-templates`; otherwise the field is a 400)."""
    pipeline = state.ready()
    if template is None:
        return pipeline
    if not state.config.allow_request_templates:
        raise InvalidRequest(
            f"{param}: this server does not accept request templates (--allow-request-templates)",
            param=param,
        )
    base = pipeline.chat_format
    if not isinstance(base, JinjaFormat):
        raise InvalidRequest(f"{param}: this model's format does not use templates", param=param)
    own = JinjaFormat(template, "request", base.tokenizer, base.bos_token, base.eos_token)
    return dataclasses.replace(pipeline, chat_format=own)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    state = _state(request)
    body = validate_body(ChatCompletionRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = pipeline_for(state, *request_template(body))
    submission = await pipeline.submit(chat_request(body, pipeline.engine.n_vocab))
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    headers = unenforced_headers(submission)
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        encoder = ChunkEncoder(completion_id, state.model_id, include_usage=include_usage)
        frames = stream_frames(
            submission,
            opening=lambda: [sse_data(encoder.opening())],
            encode=encoder.frames,
            failed=lambda exc: [sse_data(encoder.error(exc.message, exc.type, exc.code))],
            closing=lambda: [SSE_DONE],
        )
        return StreamingResponse(frames, media_type="text/event-stream", headers=headers)
    collector = ResponseCollector()
    return await collected(
        request, submission, collector.add, lambda: collector.response(completion_id, state.model_id), headers
    )


@router.post("/v1/completions")
async def completions(request: Request) -> Response:
    state = _state(request)
    body = validate_body(CompletionRequest, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    n_vocab = pipeline.engine.n_vocab
    prompt = body.prompt if isinstance(body.prompt, str) else [int(t) for t in body.prompt]
    if isinstance(prompt, list) and max(prompt) >= n_vocab:
        raise InvalidRequest(f"prompt token ids must be below {n_vocab}", param="prompt")
    submission = await pipeline.submit_text(prompt, sampling_params(body, n_vocab, body.max_tokens or 16))
    encoder = CompletionEncoder(f"cmpl-{uuid.uuid4().hex}", state.model_id)
    if body.stream:
        frames = stream_frames(
            submission,
            opening=lambda: (),
            encode=encoder.frames,
            failed=lambda exc: [sse_data(encoder.error(exc.message, exc.type, exc.code))],
            closing=lambda: [SSE_DONE],
        )
        return StreamingResponse(frames, media_type="text/event-stream")
    return await collected(request, submission, encoder.add, encoder.response)
