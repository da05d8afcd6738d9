"""The vision projector (`--mmproj`): llama.cpp's multimodal library turns an image into prompt tokens and
evaluates its embeddings into a slot's sequence.

`image_tokens` runs on a request's thread (decode, preprocess, tokenize); `evaluate` on the scheduler thread
(encode, then decode the embeddings at the slot's position). Knows nothing of HTTP, templates or image
formats beyond handing bytes or RGB pixels to llama.cpp.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as llama
import llama_cpp.mtmd_cpp as mtmd

from tokenloom.engine.media_tokens import image_key, placeholders
from tokenloom.errors import EngineError, InvalidRequest

_CHUNK_TEXT = 0  # MTMD_INPUT_CHUNK_TYPE_TEXT
_CHUNK_IMAGE = 1  # MTMD_INPUT_CHUNK_TYPE_IMAGE


@dataclass(eq=False, slots=True, weakref_slot=True)
class ImageChunk:
    """One image's preprocessed pixels (an mtmd chunk this object owns) and its place in a prompt."""

    key: int
    n_tokens: int
    handle: Any
    first_placeholder: int = 0
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.first_placeholder = placeholders(self.key, 1)[0]
        self._finalizer = weakref.finalize(self, mtmd.mtmd_input_chunk_free, self.handle)


@dataclass(frozen=True, slots=True)
class ImageTokens:
    """What one image adds to a prompt: the model's image markers around the image's placeholders."""

    tokens: list[int]  # e.g. [<start_of_image>, placeholder x N, <end_of_image>] for Gemma 3
    chunk: ImageChunk


class MediaProjector:
    """An mtmd context over the served model; one lock, since llama.cpp's clip context is not shared-safe."""

    def __init__(self, path: str, model: Any, n_threads: int) -> None:
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = False
        params.n_threads = n_threads
        params.print_timings = False
        params.warmup = True
        ctx = mtmd.mtmd_init_from_file(path.encode(), model, params)
        if not ctx:
            raise EngineError(f"llama.cpp could not load the vision projector {path} (see the log above)")
        if not mtmd.mtmd_support_vision(ctx):
            mtmd.mtmd_free(ctx)
            raise EngineError(f"{path} has no vision encoder (an audio-only projector is not supported)")
        if mtmd.mtmd_decode_use_mrope(ctx):
            mtmd.mtmd_free(ctx)
            raise EngineError(
                f"{path} needs M-RoPE positions (Qwen-VL style), which tokenloom does not place"
            )
        self._ctx = ctx
        self._lock = threading.Lock()
        self.marker = mtmd.mtmd_default_marker().decode()
        self.n_encoded = 0  # images encoded so far (a cached image is not encoded again)

    def image_tokens(self, data: bytes, rgb: tuple[int, int, bytes] | None = None) -> ImageTokens:
        """Decode (or take `rgb` = width, height, pixels), preprocess and tokenize one image.

        Raises InvalidRequest when llama.cpp cannot decode the bytes; the caller names the field.
        """
        with self._lock:
            bitmap = self._bitmap(data, rgb)
            chunks = mtmd.mtmd_input_chunks_init()
            try:
                text = self.marker.encode()
                item = mtmd.mtmd_input_text(text, len(text), False, True)
                bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
                if mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(item), bitmaps, 1) != 0:
                    raise InvalidRequest("the image could not be preprocessed for the vision projector")
                return self._collect(chunks, image_key(data))
            finally:
                mtmd.mtmd_input_chunks_free(chunks)
                mtmd.mtmd_bitmap_free(bitmap)

    def _bitmap(self, data: bytes, rgb: tuple[int, int, bytes] | None) -> Any:
        if rgb is not None:
            width, height, pixels = rgb
            buffer = (ctypes.c_uint8 * len(pixels)).from_buffer_copy(pixels)
            bitmap = mtmd.mtmd_bitmap_init(width, height, buffer)
        else:
            buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
            bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(self._ctx, buffer, len(data), False)
        if not bitmap:
            raise InvalidRequest("the image bytes could not be decoded")
        return bitmap

    def _collect(self, chunks: Any, key: int) -> ImageTokens:
        tokens: list[int] = []
        image: ImageChunk | None = None
        for index in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, index)
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == _CHUNK_TEXT:
                count = ctypes.c_size_t()
                ids = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(count))
                tokens.extend(int(ids[i]) for i in range(count.value))
            elif kind == _CHUNK_IMAGE and image is None:
                n_tokens = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
                image = ImageChunk(key, n_tokens, mtmd.mtmd_input_chunk_copy(chunk))
                tokens.extend(placeholders(key, n_tokens))
            else:
                raise InvalidRequest("the image became more than one image chunk (not supported)")
        if image is None:
            raise InvalidRequest("the vision projector produced no image tokens for the image")
        return ImageTokens(tokens, image)

    def evaluate(self, lctx: Any, chunk: ImageChunk, n_past: int, seq_id: int, n_batch: int) -> bool:
        """Encode the image and decode its embeddings at positions n_past.. of `seq_id` (False: failed)."""
        new_n_past = llama.llama_pos(0)
        with self._lock:
            rc = mtmd.mtmd_helper_eval_chunk_single(
                self._ctx, lctx, chunk.handle, n_past, seq_id, n_batch, False, ctypes.byref(new_n_past)
            )
            self.n_encoded += 1
        return rc == 0 and new_n_past.value == n_past + chunk.n_tokens

    def close(self) -> None:
        with self._lock:
            if self._ctx:
                mtmd.mtmd_free(self._ctx)
                self._ctx = None
