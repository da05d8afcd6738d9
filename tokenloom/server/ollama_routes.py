"""Ollama's API: `/api/chat` and `/api/generate` (newline-delimited JSON streams, or one object), and the
model listing calls `/api/tags`, `/api/show`, `/api/ps`, `/api/version`. Errors are `{"error": ...}`."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from tokenloom.engine.model import model_metadata
from tokenloom.errors import Overloaded, TokenloomError
from tokenloom.events import Event
from tokenloom.pipeline import Submission
from tokenloom.server.adapt_ollama import chat_request, generate_request, raw_prompt, rename, sampling
from tokenloom.server.embedding_routes import embed_texts
from tokenloom.server.encode_ollama import OllamaEncoder, ndjson
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.params import fields_named
from tokenloom.server.responding import collected, errors_rendered_by, stream_frames
from tokenloom.server.state import ServerState
from tokenloom.server.wire_ollama import ChatBody, EmbedBody, GenerateBody, ShowBody

router = APIRouter()
# Clients gate features on Ollama's version; this is the Ollama API level these routes follow.
OLLAMA_API_VERSION = "0.12.0"
FILE_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    12: "Q3_K_M",
    15: "Q4_K_M",
    17: "Q5_K_M",
    18: "Q6_K",
}


def _error(exc: TokenloomError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Overloaded) else None
    return JSONResponse({"error": exc.message_naming_param()}, status_code=exc.status, headers=headers)


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.tokenloom
    return state


async def _answer(request: Request, submission: Submission, encoder: OllamaEncoder, stream: bool) -> Response:
    if stream:
        frames = stream_frames(
            submission,
            opening=lambda: (),
            encode=lambda event: [ndjson(obj) for obj in encoder.encode(event)],
            failed=lambda exc: [ndjson(encoder.error(exc.message))],
        )
        return StreamingResponse(frames, media_type="application/x-ndjson")

    def add(event: Event) -> None:
        encoder.add(event)

    return await collected(request, submission, add, encoder.response)


@router.post("/api/chat")
@errors_rendered_by(_error)
async def chat(request: Request) -> Response:
    state = _state(request)
    body = validate_body(ChatBody, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    with fields_named(rename):
        chat_req = chat_request(body, pipeline.engine.n_vocab, pipeline.engine.n_ctx_slot)
        submission = await pipeline.submit(chat_req)
    return await _answer(request, submission, OllamaEncoder(state.model_id, "chat"), body.stream)


@router.post("/api/generate")
@errors_rendered_by(_error)
async def generate(request: Request) -> Response:
    state = _state(request)
    body = validate_body(GenerateBody, parse_json_body(await request.body()))
    state.check_model(body.model)
    pipeline = state.ready()
    engine = pipeline.engine
    with fields_named(rename):
        if body.raw:
            params = sampling(body, engine.n_vocab, engine.n_ctx_slot)
            submission = await pipeline.submit_text(raw_prompt(body), params)
        else:
            submission = await pipeline.submit(generate_request(body, engine.n_vocab, engine.n_ctx_slot))
    return await _answer(request, submission, OllamaEncoder(state.model_id, "generate"), body.stream)


def _details(state: ServerState) -> dict[str, Any]:
    meta = _metadata(state)
    file_type = meta.get("general.file_type", "")
    architecture = meta.get("general.architecture", "")
    return {
        "parent_model": "",
        "format": "gguf",
        "family": architecture,
        "families": [architecture] if architecture else None,
        "parameter_size": meta.get("general.size_label", ""),
        "quantization_level": FILE_TYPES.get(int(file_type), file_type) if file_type.isdigit() else file_type,
    }


def _metadata(state: ServerState) -> dict[str, str]:
    if state.model_info is None:
        state.model_info = model_metadata(state.ready_model().model)
    return state.model_info


def _entry(state: ServerState, name: str) -> dict[str, Any]:
    path = state.ready_model().path
    stat = path.stat()
    digest = hashlib.sha256(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()
    return {
        "name": name,
        "model": name,
        "modified_at": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
        "size": stat.st_size,
        "digest": digest,
        "details": _details(state),
    }


@router.post("/api/embed")
@errors_rendered_by(_error)
async def embed(request: Request) -> Response:
    state = _state(request)
    body = validate_body(EmbedBody, parse_json_body(await request.body()))
    state.check_model(body.model)
    texts = [body.input] if isinstance(body.input, str) else list(body.input)
    started = time.monotonic_ns()
    done = await embed_texts(request, state, texts, truncate=body.truncate, dimensions=body.dimensions)
    if done is None:
        return Response(status_code=499)
    vectors, n_tokens = done
    return JSONResponse(
        {
            "model": state.model_id,
            "embeddings": vectors,
            "total_duration": time.monotonic_ns() - started,
            "load_duration": 0,
            "prompt_eval_count": n_tokens,
        }
    )


@router.get("/api/tags")
@errors_rendered_by(_error)
async def tags(request: Request) -> Response:
    state = _state(request)
    names = [state.model_id, *(a for a in state.config.model_aliases if a != state.model_id)]
    return JSONResponse({"models": [_entry(state, name) for name in names]})


@router.get("/api/ps")
@errors_rendered_by(_error)
async def running(request: Request) -> Response:
    state = _state(request)
    entry = _entry(state, state.model_id)
    entry.pop("modified_at")
    expires = (datetime.now(UTC) + timedelta(days=3650)).isoformat()  # loaded for the server's life
    if state.pipeline is not None:
        context = state.pipeline.engine.n_ctx_slot
    else:  # an --embeddings server: the embedding context's
        context = state.ready_embedder().config.n_ctx
    entry.update(expires_at=expires, size_vram=0, context_length=context)
    return JSONResponse({"models": [entry]})


@router.post("/api/show")
@errors_rendered_by(_error)
async def show(request: Request) -> Response:
    state = _state(request)
    body = validate_body(ShowBody, parse_json_body(await request.body()))
    state.check_model(body.model or body.name)
    pipeline = state.ready()
    chat_format = pipeline.chat_format
    parameters = f"num_ctx {pipeline.engine.n_ctx_slot}"
    return JSONResponse(
        {
            "license": "",
            "modelfile": f"FROM {pipeline.engine.loaded.path}\n",
            "parameters": parameters,
            "template": chat_format.template,
            "details": _details(state),
            "model_info": _metadata(state),
            "capabilities": sorted(chat_format.capabilities()),
            "modified_at": datetime.fromtimestamp(
                pipeline.engine.loaded.path.stat().st_mtime, UTC
            ).isoformat(),
        }
    )


@router.get("/api/version")
async def version() -> Response:
    return JSONResponse({"version": OLLAMA_API_VERSION})


@router.get("/", include_in_schema=False)
async def root() -> Response:
    return PlainTextResponse("tokenloom is running (OpenAI, Anthropic and Ollama APIs)")
