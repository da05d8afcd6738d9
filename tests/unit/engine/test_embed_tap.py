"""Pooling from the tapped hidden states equals llama.cpp's own pooling, on the real default model."""

from __future__ import annotations

import numpy as np
import pytest

from tokenloom.engine.embed import EmbedConfig, Embedder
from tokenloom.engine.embed_tap import pool_rows
from tokenloom.engine.model import LoadedModel, load_model
from tokenloom.engine.vocab import Tokenizer


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    return load_model(None)


@pytest.mark.parametrize("pooling", ["mean", "last", "cls"])
def test_tapped_vectors_equal_llama_cpp_pooling(loaded: LoadedModel, pooling: str) -> None:
    tokenizer = Tokenizer(loaded)
    texts = ["Hello world", "The cat sat on the mat.", "Paris is the capital of France, they say."]
    inputs = [tokenizer.tokenize(text, add_bos=True, parse_special=False) for text in texts]
    vectors = {}
    for skip in (False, True):
        embedder = Embedder(loaded, EmbedConfig(pooling=pooling, skip_output_layer=skip, n_threads=2))
        try:
            vectors[skip] = np.array(embedder.submit(inputs).result.result(timeout=120))
        finally:
            embedder.close()
    scale = float(np.abs(vectors[False]).max())
    assert float(np.abs(vectors[True] - vectors[False]).max()) <= 1e-5 * scale


def test_pool_rows_splits_the_batch_by_sequence() -> None:
    rows = np.arange(12, dtype=np.float32).reshape(6, 2)
    mean = pool_rows(rows, [2, 4], "mean")
    assert [v.tolist() for v in mean] == [[1.0, 2.0], [7.0, 8.0]]
    assert [v.tolist() for v in pool_rows(rows, [2, 4], "cls")] == [[0.0, 1.0], [4.0, 5.0]]
    assert [v.tolist() for v in pool_rows(rows, [2, 4], "last")] == [[2.0, 3.0], [10.0, 11.0]]
