"""The FastAPI app: lifespan model loading, health, metrics, auth and CORS around the API routes."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from tokenloom.engine.embed import Embedder
from tokenloom.engine.engine import Engine
from tokenloom.engine.model import DEFAULT_MODEL_ID, LoadedModel, load_model
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import TokenloomError
from tokenloom.pipeline import Pipeline, PrefixPolicy, format_for_model
from tokenloom.runtime import tune_gc
from tokenloom.server import errors as error_handlers
from tokenloom.server.agui_routes import router as agui_router
from tokenloom.server.anthropic_routes import router as anthropic_router
from tokenloom.server.embedding_routes import router as embedding_router
from tokenloom.server.encode_anthropic import anthropic_error
from tokenloom.server.ollama_routes import router as ollama_router
from tokenloom.server.openai_routes import router as openai_router
from tokenloom.server.responses_routes import router as responses_router
from tokenloom.server.state import ServerConfig, ServerState

logger = logging.getLogger(__name__)
OPEN_PATHS = frozenset({"/health"})
ANTHROPIC_PATHS = "/v1/messages"


class ApiKeyMiddleware:
    """Bearer-token check in constant time; only the Authorization header counts, nothing bypasses it."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self._expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        bearer = api_key = b""
        anthropic = scope["path"].startswith(ANTHROPIC_PATHS)
        for name, value in scope["headers"]:
            if name == b"authorization":
                bearer = value
            elif name == b"x-api-key" and anthropic:  # Anthropic's clients send the key here
                api_key = b"Bearer " + value
        # both compared every time, in constant time, so timing tells nothing about which one was close
        by_bearer = hmac.compare_digest(bearer, self._expected)
        by_header = hmac.compare_digest(api_key, self._expected)
        if not (by_bearer or by_header):
            message = "invalid or missing API key"
            if anthropic:
                body = anthropic_error(message, 401)
            else:
                body = error_handlers.error_body(message, "authentication_error", code="invalid_api_key")
            await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


class ArrivalTracker:
    """Marks each API POST as arriving until the engine queues it (or its handling ends), so an idle
    engine waits for a burst of requests instead of prefilling the first one alone (engine/arrivals.py)."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        engine = self.state.engine
        if scope["type"] != "http" or scope.get("method") != "POST" or engine is None:
            await self.app(scope, receive, send)
            return
        with engine.arrivals.arriving():
            await self.app(scope, receive, send)


class RequestCounter:
    """Counts API requests by path and status (plain ASGI, so streaming and disconnects pass untouched)."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(("/v1/", "/api/")):
            await self.app(scope, receive, send)
            return

        async def send_counting(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.state.metrics.requests.labels(scope["path"], str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, send_counting)


def _load(state: ServerState) -> None:
    config = state.config
    loaded = load_model(config.model_path, progress=True)
    if config.embeddings_only:
        _load_embeddings_only(state, loaded)
        return
    engine = Engine(loaded, config.engine)
    chat_format = format_for_model(
        engine.tokenizer,
        loaded.chat_template,
        config.chat_template_file,
        architecture=loaded.architecture,
        forced_kind=config.chat_format,
        reasoning_format=config.reasoning_format,
    )
    state.model_id = _model_id(config, loaded)
    state.metrics.bind_engine_gauges(
        lambda: engine.stats().queued, lambda: engine.stats().busy_slots, lambda: engine.stats().paused_slots
    )
    tune_gc()
    policy = PrefixPolicy(config.cache_mode, config.cache_min_tokens)
    state.loaded, state.tokenizer = loaded, engine.tokenizer
    state.pipeline = Pipeline(
        engine, chat_format, policy, observer=state.metrics, allow_remote_media=config.allow_remote_media
    )


def _model_id(config: ServerConfig, loaded: LoadedModel) -> str:
    """The id responses carry: the first --alias, else the packaged model's name or the GGUF's file stem."""
    return next(iter(config.model_aliases), None) or (
        DEFAULT_MODEL_ID if config.model_path is None else loaded.path.stem
    )


def _load_embeddings_only(state: ServerState, loaded: LoadedModel) -> None:
    """--embeddings: the embedding context alone (an encoder such as e5 or BGE has no chat template and
    cannot generate; a chat model served this way skips its generation KV cache)."""
    state.model_id = _model_id(state.config, loaded)
    state.loaded, state.tokenizer = loaded, Tokenizer(loaded)
    state.embedder = Embedder(loaded, state.embed_config())
    tune_gc()


def create_app(config: ServerConfig, on_ready: Callable[[ServerState], None] | None = None) -> FastAPI:
    state = ServerState(config=config)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async def load() -> None:
            try:
                await asyncio.to_thread(_load, state)
            except TokenloomError as exc:
                state.load_error = exc.message
                logger.error("model loading failed: %s", exc.message)
                return
            if on_ready is not None:
                on_ready(state)

        task = asyncio.create_task(load())
        yield
        task.cancel()
        if state.embedder is not None:
            await asyncio.to_thread(state.embedder.close)
        if state.pipeline is not None:
            await asyncio.to_thread(state.pipeline.engine.close)

    app = FastAPI(title="tokenloom", lifespan=lifespan)
    app.state.tokenloom = state
    app.add_exception_handler(TokenloomError, error_handlers.tokenloom_error_handler)
    app.add_exception_handler(StarletteHTTPException, error_handlers.http_error_handler)
    app.add_exception_handler(Exception, error_handlers.unexpected_error_handler)
    app.include_router(openai_router)
    app.include_router(agui_router)
    app.include_router(responses_router)
    app.include_router(anthropic_router)
    app.include_router(ollama_router)
    app.include_router(embedding_router)

    @app.get("/health")
    async def health() -> Response:
        if state.is_ready:
            return JSONResponse({"status": "ok"})
        status = "error" if state.load_error else "loading"
        body: dict[str, Any] = {"status": status}
        body.update(
            error_handlers.error_body(state.load_error or "the model is loading", "unavailable_error")
        )
        return JSONResponse(body, status_code=503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state.metrics.render(), media_type="text/plain; version=0.0.4")

    app.add_middleware(ArrivalTracker, state=state)
    app.add_middleware(RequestCounter, state=state)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    if config.cors_origins:
        wildcard = "*" in config.cors_origins
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_credentials=not wildcard,  # never reflect an arbitrary origin together with credentials
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "x-api-key", "anthropic-version"],
        )
    return app
