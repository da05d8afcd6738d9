"""What a running server holds: configuration, the pipeline once the model is loaded, metrics."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from tokenloom.engine.embed import EmbedConfig, Embedder
from tokenloom.engine.engine import Engine, EngineConfig
from tokenloom.engine.model import LoadedModel
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import ModelNotFound, NotServed, TokenloomError
from tokenloom.pipeline.chat_format import CacheMode
from tokenloom.pipeline.submit import Pipeline
from tokenloom.server.metrics import Metrics


@dataclass(frozen=True, slots=True)
class ServerConfig:
    model_path: str | None = None  # None: the packaged Gemma 3 270M
    model_aliases: tuple[str, ...] = ()  # --alias (repeatable): the names /v1/models reports, first is the id
    strict_model_name: bool = False  # a request naming another model is a 404 (default: served anyway)
    engine: EngineConfig = field(default_factory=EngineConfig)
    chat_template_file: Path | None = None
    cache_mode: CacheMode = "none"  # seed 003's system-prompt / first-message cache in sequence 0
    cache_min_tokens: int = 100
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    reasoning_format: str = "auto"
    chat_format: str = "auto"  # --chat-format: "auto" (detected at load) or a format's name
    allow_request_templates: bool = False  # a request's own `chat_template` (off: a 400 naming it)
    pooling: str | None = None  # --pooling: embeddings' pooling (None: the GGUF's, else mean)
    normalize_embeddings: bool = True  # --no-normalize turns the L2 normalisation off
    embeddings_only: bool = False  # --embeddings: an embedding model; no generation engine at all
    embed_batch: int = 512  # --embed-batch: tokens the embedding context decodes together (longest input)
    allow_remote_media: bool = False  # --allow-remote-media: fetch http(s) image URLs (default: a 400)


@dataclass(slots=True)
class ServerState:
    config: ServerConfig
    metrics: Metrics = field(default_factory=Metrics)
    pipeline: Pipeline | None = None
    model_id: str = ""
    load_error: str | None = None
    model_info: dict[str, str] | None = None  # the GGUF's metadata, read once for Ollama's /api/show
    embedder: Embedder | None = None  # the embedding context, made by the first request that needs it
    embedder_lock: threading.Lock = field(default_factory=threading.Lock)
    loaded: LoadedModel | None = None  # the model, once loaded (with or without a generation engine)
    tokenizer: Tokenizer | None = None

    def ready_embedder(self) -> Embedder:
        """The embedding/scoring context (created once, on first use: idle servers don't pay for it)."""
        loaded = self.ready_model()
        with self.embedder_lock:
            if self.embedder is None:
                self.embedder = Embedder(loaded, self.embed_config())
            return self.embedder

    @property
    def is_ready(self) -> bool:
        return self.pipeline is not None or (self.config.embeddings_only and self.embedder is not None)

    def embed_config(self) -> EmbedConfig:
        size = self.config.embed_batch
        return EmbedConfig(size, pooling=self.config.pooling, n_threads=self.config.engine.n_threads,
                           max_input_tokens=size)  # fmt: skip

    def ready_model(self) -> LoadedModel:
        if self.loaded is None or not self.is_ready:
            raise TokenloomError(self.load_error or "the model is still loading")
        return self.loaded

    def ready_tokenizer(self) -> Tokenizer:
        self.ready_model()
        assert self.tokenizer is not None
        return self.tokenizer

    def ready(self) -> Pipeline:
        if self.pipeline is None:
            if self.config.embeddings_only and self.load_error is None:
                raise NotServed(
                    "this server was started with --embeddings: it serves embeddings (/v1/embeddings, "
                    "/api/embed) and rank-pooling reranking only; start it without --embeddings to generate"
                )
            raise TokenloomError(self.load_error or "the model is still loading")
        return self.pipeline

    @property
    def engine(self) -> Engine | None:
        return None if self.pipeline is None else self.pipeline.engine

    def check_model(self, requested: str) -> None:
        """With one model loaded every name is served by it, as llama-server does (clients hard-code
        `gpt-4o` or `claude-...`); with --strict-model-name only our names are, others are a 404."""
        if not self.config.strict_model_name:
            return
        if requested and requested not in self.model_names():
            raise ModelNotFound(
                f"the model {requested!r} is not served here; try {self.model_id!r}", param="model"
            )

    def model_names(self) -> set[str]:
        names = {self.model_id, *self.config.model_aliases}
        if self.loaded is not None:
            path = self.loaded.path
            names |= {path.name, path.stem}
        return names
