"""Vocab-only load of the default GGUF: pieces, special and end-of-generation tokens, round trips."""

from __future__ import annotations

import pytest

from tokenloom.engine.vocab import Tokenizer, load_tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


def test_round_trip_of_text_with_multibyte_characters(tokenizer: Tokenizer) -> None:
    text = "Héllo wörld, 日本語 and emoji 😀\n\tend"
    assert tokenizer.detokenize(tokenizer.tokenize(text)) == text


def test_special_tokens_are_parsed_and_eog_known(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokenize("<start_of_turn>user\nhi<end_of_turn>")
    assert tokenizer.piece(tokens[0]) == b"<start_of_turn>"
    assert tokenizer.is_eog(tokens[-1])
    assert tokenizer.tokenize("<start_of_turn>", parse_special=False) != tokens[:1]


def test_vocab_pieces_and_classes(tokenizer: Tokenizer) -> None:
    vocab = tokenizer.vocab
    assert vocab.n_vocab == tokenizer.n_vocab == 262144
    assert vocab.bos_id == tokenizer.bos_id and vocab.bos_id in vocab.special_ids
    end_of_turn = tokenizer.tokenize("<end_of_turn>")[0]
    assert end_of_turn in vocab.eog_ids and end_of_turn in vocab.special_ids
    assert vocab.pieces[tokenizer.tokenize(" world")[0]] == b" world"  # SentencePiece "▁" is a space
    newline = tokenizer.tokenize("\n")[0]
    assert vocab.pieces[newline] == b"\n"
    # some tokens are partial UTF-8: byte-fallback pieces that only decode together
    assert any(len(p) == 1 and p[0] >= 0x80 for p in vocab.pieces)
