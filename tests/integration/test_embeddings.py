"""Embeddings and reranking on the default model, over real HTTP, beside generation."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import openai
import pytest

pytestmark = pytest.mark.integration

SENTENCES = ["Hello world", "The cat sat on the mat.", "Paris is the capital of France.", "1 2 3 4 5"]
DOCS = [
    "Bananas are yellow and grow in bunches.",
    "The capital of France is Paris.",
    "Python is a programming language.",
    "The ocean is deep and blue.",
]


def _vectors(client: openai.OpenAI, texts: Any, **extra: Any) -> np.ndarray:
    reply = client.embeddings.create(model="x", input=texts, **extra)
    return np.array([item.embedding for item in sorted(reply.data, key=lambda d: d.index)])


def test_same_text_same_vector_unit_norm_and_batch_equals_one_by_one(client: openai.OpenAI) -> None:
    batch = _vectors(client, SENTENCES)
    assert batch.shape == (4, 640)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([_vectors(client, text) for text in SENTENCES])
    # llama.cpp's CPU matmuls round a row differently by its place in a batch, and some CPUs show it
    # (an AVX-512 Xeon: cosine 0.99956 against the same text alone; other texts are below 0.75)
    assert (batch * one_by_one).sum(axis=1).min() > 0.999
    again = _vectors(client, SENTENCES[1])
    assert float(again[0] @ batch[1]) == pytest.approx(1.0, abs=1e-5)  # cosine with itself
    assert float(batch[0] @ batch[1]) < 0.999  # different texts, different vectors


def test_base64_token_ids_dimensions_and_usage(client: openai.OpenAI, http: httpx.Client) -> None:
    floats = _vectors(client, SENTENCES[0])[0]
    reply = http.post("/v1/embeddings", json={"input": SENTENCES[0], "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(reply["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(decoded, floats, atol=1e-6)
    assert reply["usage"]["prompt_tokens"] == reply["usage"]["total_tokens"] > 0
    short = http.post("/v1/embeddings", json={"input": SENTENCES[0], "dimensions": 64}).json()
    vector = np.array(short["data"][0]["embedding"])
    assert vector.shape == (64,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    raw = http.post("/v1/embeddings", json={"input": SENTENCES[0], "normalize": False}).json()
    assert abs(float(np.linalg.norm(raw["data"][0]["embedding"])) - 1.0) > 1e-3
    ids = http.post("/v1/embeddings", json={"input": [[2, 9259, 1902]]}).json()
    assert len(ids["data"]) == 1 and ids["usage"]["prompt_tokens"] == 3


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": ["fine", "word " * 3000]}, "input[1]"),
        ({"input": ["fine", ""]}, "input[1]"),
        ({"input": [[1, 2, 99999999]]}, "input[0]"),
        ({"input": "x", "dimensions": 100000}, "dimensions"),
        ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
        ({"input": 5}, "input"),
    ],
)
def test_bad_inputs_name_the_field(http: httpx.Client, body: dict[str, Any], param: str) -> None:
    response = http.post("/v1/embeddings", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


def test_an_over_long_input_is_cut_when_asked(http: httpx.Client) -> None:
    reply = http.post("/v1/embeddings", json={"input": "word " * 3000, "truncate": True})
    assert reply.status_code == 200 and reply.json()["usage"]["prompt_tokens"] == 512  # --embed-batch
    refused = http.post("/v1/embeddings", json={"input": ["short", "word " * 3000]})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "input[1]"
    assert "more than the 512" in refused.json()["error"]["message"]


def test_rerank_orders_limits_and_returns_documents(http: httpx.Client) -> None:
    body = {"query": "What is the capital of France?", "documents": DOCS, "return_documents": True}
    reply = http.post("/v1/rerank", json=body).json()
    results = reply["results"]
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True) and sorted(r["index"] for r in results) == [0, 1, 2, 3]
    assert all(r["document"]["text"] == DOCS[r["index"]] for r in results)
    assert all(0.0 <= s <= 1.0 for s in scores) and reply["usage"]["prompt_tokens"] > 0
    top = http.post("/rerank", json={**body, "top_n": 2, "documents": [{"text": d} for d in DOCS]}).json()
    assert [r["index"] for r in top["results"]] == [r["index"] for r in results[:2]]
    assert "document" in top["results"][0]
    bad = http.post("/v1/rerank", json={"query": "q", "documents": []})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "documents"


def test_embeddings_and_generation_at_the_same_time(client: openai.OpenAI) -> None:
    def generate() -> str:
        reply = client.chat.completions.create(
            model="", messages=[{"role": "user", "content": "Count to ten."}], max_tokens=24, temperature=0
        )
        return reply.choices[0].message.content or ""

    with ThreadPoolExecutor(3) as pool:
        chat = pool.submit(generate)
        vectors = [pool.submit(_vectors, client, SENTENCES * 8) for _ in range(2)]
        assert chat.result() and all(v.result().shape == (32, 640) for v in vectors)


@pytest.fixture(scope="module")
def embeddings_only(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.integration.conftest import _serve

    yield from _serve(tmp_path_factory, "embeddings-only", "--embeddings", "--alias", "my-embedder")


def test_an_embeddings_only_server_embeds_and_refuses_generation(
    embeddings_only: Any, client: openai.OpenAI
) -> None:
    """--embeddings runs the embedding context alone: same vectors as beside generation, and the
    generation endpoints say clearly that this server does not generate."""
    only = openai.OpenAI(base_url=embeddings_only.base_url, api_key="unused", max_retries=0, timeout=120)
    mine = _vectors(only, SENTENCES)
    assert np.abs(mine - _vectors(client, SENTENCES)).max() < 1e-5
    assert only.models.list().data[0].id == "my-embedder"
    with httpx.Client(base_url=embeddings_only.url, timeout=60) as http:
        assert http.get("/health").json() == {"status": "ok"}
        for path, body in [
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
            ("/v1/completions", {"prompt": "hi"}),
            ("/v1/rerank", {"query": "q", "documents": ["a", "b"]}),
        ]:
            r = http.post(path, json=body)
            assert r.status_code == 501, (path, r.text)
            assert "--embeddings" in r.json()["error"]["message"]
        ollama = http.post("/api/embed", json={"model": "my-embedder", "input": ["Hello world"]})
        assert ollama.status_code == 200 and len(ollama.json()["embeddings"][0]) == 640
        assert http.get("/api/ps").json()["models"][0]["name"] == "my-embedder"


RANK_OFFSET = -20.0  # the test reranker's classifier bias: its raw scores lie near -20, never in (0, 1)


@pytest.fixture(scope="module")
def rank_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A tiny BERT reranker (rank pooling, classifier head, random weights) the test writes itself."""
    from tests.ggufs import write_bert_reranker
    from tests.integration.conftest import _serve

    path = tmp_path_factory.mktemp("reranker") / "tiny-reranker.gguf"
    write_bert_reranker(path, words=("paris", "france", "capital", "bananas"), score_offset=RANK_OFFSET)
    yield from _serve(tmp_path_factory, "rank", "--model", str(path), "--embeddings")


def test_a_rank_pooling_gguf_is_served_through_its_classifier_head(rank_server: Any) -> None:
    with httpx.Client(base_url=rank_server.url, timeout=60) as http:
        body = {"query": "What is the capital of France?", "documents": DOCS, "return_documents": True}
        reply = http.post("/v1/rerank", json=body)
        assert reply.status_code == 200, reply.text
        results = reply.json()["results"]
        scores = [r["relevance_score"] for r in results]
        assert sorted(r["index"] for r in results) == [0, 1, 2, 3]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4
        # raw classifier scores (the judging recipe's are probabilities in (0, 1))
        assert all(abs(s - RANK_OFFSET) < 10 for s in scores)
        assert all(r["document"]["text"] == DOCS[r["index"]] for r in results)
        # each pair is scored alone: the same document alone, or as the other route, scores the same
        for r in results[:2]:
            alone = http.post(
                "/rerank", json={"query": body["query"], "documents": [DOCS[r["index"]]]}
            ).json()
            assert alone["results"][0]["relevance_score"] == pytest.approx(r["relevance_score"], rel=1e-4)
            assert alone["results"][0]["index"] == 0 and "document" not in alone["results"][0]
        top = http.post("/v1/rerank", json={**body, "top_n": 2, "documents": [{"text": d} for d in DOCS]})
        assert [r["index"] for r in top.json()["results"]] == [r["index"] for r in results[:2]]
        assert reply.json()["usage"]["prompt_tokens"] > len(DOCS) * 3
        for bad, param in [
            ({"query": "q", "documents": []}, "documents"),
            ({"query": "q", "documents": ["a"], "top_n": 0}, "top_n"),
            ({"query": "q", "documents": ["a", "word " * 600]}, "documents[1]"),
            ({"documents": ["a"]}, "query"),
        ]:
            refused = http.post("/v1/rerank", json=bad)
            assert refused.status_code == 400, (bad, refused.text)
            assert refused.json()["error"]["param"] == param
        vectors = http.post("/v1/embeddings", json={"input": "hello"})
        assert vectors.status_code == 400 and "/v1/rerank" in vectors.json()["error"]["message"]
        chat = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert chat.status_code == 501
