"""`POST /v1/embeddings` (OpenAI's shape) and `POST /v1/rerank` (the shape llama-server, Jina and Cohere
clients use), served by the engine's embedding context beside generation."""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from tokenloom.engine.embed import POOLING, Embedder
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.chat_format import PrefixPolicy
from tokenloom.pipeline.request import ChatRequest, Message, Reasoning
from tokenloom.server.adapt_openai import sampling_params
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.state import ServerState
from tokenloom.server.wire import SamplingFields

router = APIRouter()

TokenIds = list[Annotated[int, Field(ge=0)]]
# The judging recipe of chat-model rerankers (as Qwen3-Reranker describes it): the model answers "yes" or
# "no" to whether the document meets the query; the score is P(yes) over {yes, no} at the answer position.
JUDGE_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
JUDGE_INSTRUCT = "Given a web search query, retrieve relevant passages that answer the query"


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str = ""
    input: str | list[str] | TokenIds | list[TokenIds]
    encoding_format: str = "float"
    dimensions: Annotated[int, Field(ge=1)] | None = None
    user: str | None = None
    normalize: bool | None = None  # extension: false returns the raw pooled vectors
    truncate: bool = False  # extension: cut over-long inputs instead of refusing them


class RerankDocument(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str


class RerankBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str = ""
    query: str
    documents: Annotated[list[str | RerankDocument], Field(min_length=1, max_length=1000)]
    top_n: Annotated[int, Field(ge=1)] | None = None
    return_documents: bool = False


def _inputs(body: EmbeddingsBody, state: ServerState, limit: int) -> list[list[int]]:
    tokenizer = state.ready_tokenizer()
    raw = body.input
    items: list[Any] = [raw] if isinstance(raw, str) else list(raw)
    if items and all(isinstance(item, int) for item in items):
        items = [items]  # one input given as token ids
    if not items:
        raise InvalidRequest("input: at least one input is needed", param="input")
    out: list[list[int]] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            if not item:
                raise InvalidRequest(f"input[{index}]: an input may not be empty", param=f"input[{index}]")
            tokens = tokenizer.tokenize(item, add_bos=tokenizer.adds_bos, parse_special=False)
        else:
            tokens = list(item)
            bad = next((t for t in tokens if t >= tokenizer.n_vocab), None)
            if bad is not None:
                raise InvalidRequest(
                    f"input[{index}]: token {bad} is outside the vocabulary ({tokenizer.n_vocab})",
                    param=f"input[{index}]",
                )
        if not tokens:
            raise InvalidRequest(f"input[{index}]: an input may not be empty", param=f"input[{index}]")
        if len(tokens) > limit:
            if not body.truncate:
                raise InvalidRequest(
                    f"input[{index}]: {len(tokens)} tokens, more than the {limit} an input may have "
                    f"(send truncate: true to cut it)",
                    param=f"input[{index}]",
                )
            tokens = tokens[:limit]
        out.append(tokens)
    return out


async def embed_texts(
    request: Request, state: ServerState, texts: list[str], *, truncate: bool, dimensions: int | None = None
) -> tuple[list[list[float]], int] | None:
    """Normalised vectors of `texts` (and their token count) for other APIs' embedding routes (Ollama's);
    None when the client went away."""
    embedder = await asyncio.to_thread(state.ready_embedder)
    body = EmbeddingsBody(input=texts, truncate=truncate, dimensions=dimensions)
    inputs = _inputs(body, state, embedder.config.max_input_tokens)
    vectors = await _run(request, embedder, inputs, None)
    if vectors is None:
        return None
    normalize = state.config.normalize_embeddings
    finished = [finish_vector(v, dimensions, normalize).tolist() for v in vectors]
    return finished, sum(len(t) for t in inputs)


async def _run(
    request: Request, embedder: Embedder, inputs: list[list[int]], logits: tuple[int, ...] | None
) -> Any:
    job = await asyncio.to_thread(embedder.submit, inputs, logits)
    waiting = asyncio.wrap_future(job.result)
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=0.2)
        if done:
            return waiting.result()
        if await request.is_disconnected():
            embedder.cancel(job)
            return None


def finish_vector(
    vector: np.ndarray[Any, Any], dimensions: int | None, normalize: bool
) -> np.ndarray[Any, Any]:
    """Truncate to `dimensions` (for models trained for it) and L2-normalise, unless told not to."""
    if dimensions is not None:
        vector = vector[:dimensions]
    if normalize:
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            vector = vector / norm
    return vector.astype(np.float32)


@router.post("/v1/embeddings")
@router.post("/embeddings", include_in_schema=False)
async def embeddings(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    body = validate_body(EmbeddingsBody, parse_json_body(await request.body()))
    state.check_model(body.model)
    if body.encoding_format not in ("float", "base64"):
        raise InvalidRequest("encoding_format: float or base64", param="encoding_format")
    embedder = await asyncio.to_thread(state.ready_embedder)
    if embedder.pooling == POOLING["rank"]:
        raise InvalidRequest("input: this model scores pairs (rank pooling); use /v1/rerank", param="input")
    if body.dimensions is not None and body.dimensions > embedder.n_embd:
        raise InvalidRequest(f"dimensions: at most {embedder.n_embd} for this model", param="dimensions")
    inputs = _inputs(body, state, embedder.config.max_input_tokens)
    vectors = await _run(request, embedder, inputs, None)
    if vectors is None:
        return Response(status_code=499)
    normalize = state.config.normalize_embeddings if body.normalize is None else body.normalize
    data = []
    for index, vector in enumerate(vectors):
        final = finish_vector(vector, body.dimensions, normalize)
        encoded: Any = (
            base64.b64encode(final.astype("<f4").tobytes()).decode()
            if body.encoding_format == "base64"
            else final.tolist()
        )
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(t) for t in inputs)
    return JSONResponse(
        {
            "object": "list",
            "data": data,
            "model": state.model_id,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    )


def _judging_prompts(state: ServerState, query: str, documents: list[str]) -> list[list[int]]:
    pipeline = state.ready()
    prompts = []
    for document in documents:
        user = f"<Instruct>: {JUDGE_INSTRUCT}\n<Query>: {query}\n<Document>: {document}"
        request = ChatRequest(
            messages=(Message("system", JUDGE_SYSTEM), Message("user", user)),
            sampling=sampling_params(SamplingFields(), pipeline.engine.n_vocab, 1),
            reasoning=Reasoning(enabled=False),
        )
        prompts.append(pipeline.chat_format.prompt(request, PrefixPolicy()).tokens)
    return prompts


def _answer_tokens(state: ServerState) -> tuple[int, int]:
    tokenizer = state.ready_tokenizer()
    yes = tokenizer.tokenize("yes", add_bos=False, parse_special=False)
    no = tokenizer.tokenize("no", add_bos=False, parse_special=False)
    return yes[0], no[0]


def _pair_inputs(state: ServerState, query: str, documents: list[str]) -> list[list[int]]:
    """A rank-pooling model reads query and document as one sequence: BOS query EOS SEP document EOS."""
    tokenizer = state.ready_tokenizer()
    eos = [tokenizer.eos_id] if tokenizer.eos_id is not None else []
    q = tokenizer.tokenize(query, add_bos=True, parse_special=False)
    return [q + eos + tokenizer.tokenize(d, add_bos=False, parse_special=False) + eos for d in documents]


@router.post("/v1/rerank")
@router.post("/rerank", include_in_schema=False)
async def rerank(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    body = validate_body(RerankBody, parse_json_body(await request.body()))
    state.check_model(body.model)
    texts = [d if isinstance(d, str) else d.text for d in body.documents]
    embedder = await asyncio.to_thread(state.ready_embedder)
    if embedder.pooling == POOLING["rank"]:
        inputs = await asyncio.to_thread(_pair_inputs, state, body.query, texts)
        logits: tuple[int, ...] | None = None
    else:
        inputs = await asyncio.to_thread(_judging_prompts, state, body.query, texts)
        logits = _answer_tokens(state)
    for index, tokens in enumerate(inputs):
        if len(tokens) > embedder.config.max_input_tokens:
            raise InvalidRequest(
                f"documents[{index}]: query and document take {len(tokens)} tokens, more than "
                f"{embedder.config.max_input_tokens}",
                param=f"documents[{index}]",
            )
    outputs = await _run(request, embedder, inputs, logits)
    if outputs is None:
        return Response(status_code=499)
    if logits is None:
        scores = [float(out[0]) for out in outputs]
    else:
        scores = [float(1.0 / (1.0 + np.exp(float(out[1]) - float(out[0])))) for out in outputs]
    order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)[: body.top_n or len(scores)]
    results = []
    for index in order:
        item: dict[str, Any] = {"index": index, "relevance_score": scores[index]}
        if body.return_documents:
            item["document"] = {"text": texts[index]}
        results.append(item)
    n_tokens = sum(len(t) for t in inputs)
    return JSONResponse(
        {
            "model": state.model_id,
            "object": "list",
            "results": results,
            "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
        }
    )
