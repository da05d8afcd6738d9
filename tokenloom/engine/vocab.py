"""The vocabulary: token pieces as bytes, special and end-of-generation tokens, tokenize/detokenize.

`Vocab` is plain data (constrain/ builds its trie from it); `Tokenizer` wraps the llama.cpp vocab handle.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import llama_cpp as llama

from tokenloom.engine.model import LoadedModel, load_model


@dataclass(frozen=True, slots=True)
class Vocab:
    """Token id -> the bytes it adds to the output, plus the token classes constraints need."""

    pieces: tuple[bytes, ...]  # byte-fallback <0x0A> -> b"\n"; SentencePiece "▁" -> b" "
    special_ids: frozenset[int]  # control tokens (e.g. <start_of_turn>): never inside structure
    eog_ids: frozenset[int]  # end-of-generation tokens (e.g. <eos>, <end_of_turn>)
    bos_id: int | None

    @property
    def n_vocab(self) -> int:
        return len(self.pieces)


class Tokenizer:
    """Text <-> tokens for one llama.cpp vocabulary; safe to call from any thread."""

    def __init__(self, loaded: LoadedModel) -> None:
        self._loaded = loaded  # keeps the model (and so the vocab handle) alive
        self._vocab_handle: Any = loaded.vocab
        self.n_vocab = int(llama.llama_vocab_n_tokens(self._vocab_handle))
        self.adds_bos = bool(llama.llama_vocab_get_add_bos(self._vocab_handle))
        bos = int(llama.llama_vocab_bos(self._vocab_handle))
        eos = int(llama.llama_vocab_eos(self._vocab_handle))
        self.bos_id: int | None = bos if bos >= 0 else None
        self.eos_id: int | None = eos if eos >= 0 else None

    def tokenize(self, text: str, *, add_bos: bool = False, parse_special: bool = True) -> list[int]:
        """Tokens of `text`; special-token text (e.g. "<start_of_turn>") becomes special tokens."""
        data = text.encode("utf-8", "surrogatepass")
        capacity = len(data) + 8
        buffer = (llama.llama_token * capacity)()
        count = llama.llama_tokenize(
            self._vocab_handle, data, len(data), buffer, capacity, add_bos, parse_special
        )
        if count < 0:
            capacity = -count
            buffer = (llama.llama_token * capacity)()
            count = llama.llama_tokenize(
                self._vocab_handle, data, len(data), buffer, capacity, add_bos, parse_special
            )
        return list(buffer[:count])

    def piece(self, token_id: int) -> bytes:
        """The bytes one token adds to the output (special tokens as their text)."""
        buffer = ctypes.create_string_buffer(64)
        length = llama.llama_token_to_piece(self._vocab_handle, token_id, buffer, 64, 0, True)
        if length < 0:
            buffer = ctypes.create_string_buffer(-length)
            length = llama.llama_token_to_piece(self._vocab_handle, token_id, buffer, -length, 0, True)
        return buffer.raw[:length]

    def detokenize(self, tokens: list[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", "replace")

    def is_eog(self, token_id: int) -> bool:
        return bool(llama.llama_vocab_is_eog(self._vocab_handle, token_id))

    def token_text(self, token_id: int) -> str:
        return self.piece(token_id).decode("utf-8", "replace")

    @cached_property
    def control_texts(self) -> frozenset[str]:
        """The texts that special parsing turns into control (or unknown) tokens, e.g. "<start_of_turn>";
        with special parsing off they stay ordinary text."""
        handle = self._vocab_handle
        hidden = int(llama.LLAMA_TOKEN_ATTR_CONTROL | llama.LLAMA_TOKEN_ATTR_UNKNOWN)
        texts = set()
        for token in range(self.n_vocab):
            if int(llama.llama_vocab_get_attr(handle, token)) & hidden:
                text = llama.llama_vocab_get_text(handle, token)
                if text:
                    texts.add(text.decode("utf-8", "replace"))
        return frozenset(texts)

    @cached_property
    def vocab(self) -> Vocab:
        """All pieces and token classes, computed once (262k calls: about a second)."""
        handle = self._vocab_handle
        pieces = tuple(self.piece(t) for t in range(self.n_vocab))
        special = frozenset(t for t in range(self.n_vocab) if llama.llama_vocab_is_control(handle, t))
        eog = frozenset(t for t in range(self.n_vocab) if llama.llama_vocab_is_eog(handle, t))
        return Vocab(pieces=pieces, special_ids=special | eog, eog_ids=eog, bos_id=self.bos_id)


def load_tokenizer(model_path: str | Path | None = None) -> Tokenizer:
    """A vocab-only load (no weights): the tokenizer of a GGUF file or of the default model."""
    return Tokenizer(load_model(model_path, vocab_only=True))


def load_vocab(model_path: str | Path | None = None) -> Vocab:
    """The `Vocab` of a GGUF file (vocab-only load); None means the default model."""
    return load_tokenizer(model_path).vocab
