"""Pooled embeddings without the output layer: read the final hidden states as llama.cpp computes them,
then stop the graph before its vocabulary projection.

An embedding context outputs every token, and a decoder model's graph then projects every token onto the
vocabulary (Gemma 3 270M: 262k x 640, more work than the rest of the model) although pooling never reads
those logits. llama.cpp's graph-evaluation callback lets a caller observe a node and end the computation
after it; this observes `result_norm` (the normed last hidden states pooling reads) and ends there, and
the pooling is done here. Knows nothing of requests; a graph without that node is computed in full.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import llama_cpp as llama
import numpy as np

_HIDDEN = b"result_norm"  # the node llama.cpp's own pooling reads (`res->t_embd`) in decoder graphs


def _ggml() -> Any:
    library = ctypes.CDLL(os.path.join(os.path.dirname(llama.__file__), "lib", "libggml-base.so"))
    library.ggml_get_name.restype = ctypes.c_char_p
    library.ggml_get_name.argtypes = [ctypes.c_void_p]
    library.ggml_get_data_f32.restype = ctypes.POINTER(ctypes.c_float)
    library.ggml_get_data_f32.argtypes = [ctypes.c_void_p]
    library.ggml_nelements.restype = ctypes.c_int64
    library.ggml_nelements.argtypes = [ctypes.c_void_p]
    library.ggml_nrows.restype = ctypes.c_int64
    library.ggml_nrows.argtypes = [ctypes.c_void_p]
    library.ggml_is_contiguous.restype = ctypes.c_bool
    library.ggml_is_contiguous.argtypes = [ctypes.c_void_p]
    return library


_GGML_TYPE_F32 = 0


class HiddenStateTap:
    """Set as a context's `cb_eval`; `expect(n_rows, width)` before a decode arms it for that decode."""

    def __init__(self) -> None:
        self._lib = _ggml()
        self._expected: tuple[int, int] | None = None
        self.rows: np.ndarray[Any, Any] | None = None
        self.callback = llama.ggml_backend_sched_eval_callback(self._on_node)  # kept alive with self

    def expect(self, n_rows: int, width: int) -> None:
        self._expected, self.rows = (n_rows, width), None

    def disarm(self) -> None:
        self._expected = None

    def _on_node(self, tensor: Any, ask: bool, _user_data: Any) -> bool:
        if self._expected is None or self._lib.ggml_get_name(tensor) != _HIDDEN:
            return not ask  # not observed: computed with its neighbours in one pass
        if ask:
            return True
        expected, self._expected = self._expected, None
        lib = self._lib
        if (
            ctypes.c_int32.from_address(tensor).value != _GGML_TYPE_F32  # ggml_tensor starts with its type
            or not lib.ggml_is_contiguous(tensor)
            or lib.ggml_nrows(tensor) != expected[0]
            or lib.ggml_nelements(tensor) != expected[0] * expected[1]
        ):
            return True  # not the shape pooling reads: let llama.cpp finish as usual
        data = np.ctypeslib.as_array(lib.ggml_get_data_f32(tensor), shape=expected)
        self.rows = data.copy()
        return False  # the hidden states are all pooling needs: skip the vocabulary projection


def pool_rows(rows: np.ndarray[Any, Any], lengths: list[int], pooling: str) -> list[np.ndarray[Any, Any]]:
    """Each sequence's vector from its rows (the sequences' tokens, in batch order), as llama.cpp pools."""
    out: list[np.ndarray[Any, Any]] = []
    start = 0
    for length in lengths:
        block = rows[start : start + length]
        if pooling == "mean":
            out.append(block.mean(axis=0, dtype=np.float64).astype(np.float32))
        elif pooling == "cls":
            out.append(block[0].copy())
        else:  # "last"
            out.append(block[-1].copy())
        start += length
    return out
