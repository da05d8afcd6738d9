"""Tiny GGUF files the tests write for themselves: a vision projector and a reranker, random weights.

No real vision or reranking model can be downloaded here, so these exercise llama.cpp's real loaders and
tokenloom's real paths; what the models answer is meaningless. Knows nothing of tokenloom.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np

GEMMA3_TEXT_WIDTH = 640  # n_embd of the default model (Gemma 3 270M): the projector must output it


def write_gemma3_projector(
    path: Path,
    *,
    text_width: int = GEMMA3_TEXT_WIDTH,
    image_size: int = 64,
    patch_size: int = 8,
    merge: int = 2,
    seed: int = 0,
) -> int:
    """A `gemma3` projector with a one-layer SigLIP-like tower; returns the image tokens per image.

    Shapes are given as numpy shapes (ggml's reversed): llama.cpp's clip loader reads them as
    siglip.cpp builds its graph (patch conv, learned positions, pre-norm blocks, avg-pool by `merge`,
    RMS norm, projection to the text model's width).
    """
    rng = np.random.default_rng(seed)
    width, heads, ff = 32, 2, 48  # ff != width, so the loader does not take up/down for swapped
    n_patches = (image_size // patch_size) ** 2

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", "gemma3")
    writer.add_bool("clip.use_gelu", True)
    writer.add_uint32("clip.vision.embedding_length", width)
    writer.add_uint32("clip.vision.attention.head_count", heads)
    writer.add_uint32("clip.vision.feed_forward_length", ff)
    writer.add_uint32("clip.vision.block_count", 1)
    writer.add_uint32("clip.vision.projection_dim", text_width)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    writer.add_uint32("clip.vision.image_size", image_size)
    writer.add_uint32("clip.vision.patch_size", patch_size)
    writer.add_uint32("clip.vision.projector.scale_factor", merge)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    tensors = {
        "v.patch_embd.weight": weights(width, 3, patch_size, patch_size),
        "v.patch_embd.bias": weights(width),
        "v.position_embd.weight": weights(n_patches, width),
        "v.post_ln.weight": np.ones(width, np.float32),
        "v.post_ln.bias": np.zeros(width, np.float32),
        "mm.soft_emb_norm.weight": np.ones(width, np.float32),
        "mm.input_projection.weight": weights(width, text_width),
    }
    tensors |= _encoder_block(
        "v.blk.0", ("attn_q", "attn_k", "attn_v", "attn_out"), ("ln1", "ln2"), width, ff, weights
    )
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    _finish(writer)
    return n_patches // (merge * merge)


SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def write_bert_reranker(
    path: Path, *, words: tuple[str, ...] = (), score_offset: float = 0.0, seed: int = 0
) -> list[str]:
    """A one-layer BERT with rank pooling and a classifier head (BGE-reranker's shape, tiny, random
    weights); a WordPiece vocabulary of letters and digits (any lowercase text tokenizes), plus `words`.

    `score_offset` is the classifier's bias: a raw head score lies within about 5 of it. Returns the
    vocabulary. llama.cpp's WPM tokenizer marks a word's start with U+2581, as
    convert_hf_to_gguf.py writes BERT vocabularies.
    """
    rng = np.random.default_rng(seed)
    width, heads, ff, n_ctx = 32, 2, 64, 512
    vocab = [*SPECIALS]
    vocab += ["\u2581" + c for c in _LETTERS] + list(_LETTERS) + ["\u2581.", "\u2581,", "\u2581?", "\u2581!"]
    vocab += ["\u2581" + w for w in words if "\u2581" + w not in vocab]

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name("tiny-test-reranker")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(width)
    writer.add_feed_forward_length(ff)
    writer.add_block_count(1)
    writer.add_head_count(heads)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(vocab)
    writer.add_token_types([3 if token in SPECIALS else 1 for token in vocab])
    writer.add_token_scores([0.0] * len(vocab))
    writer.add_token_type_count(2)
    writer.add_pad_token_id(0)
    writer.add_unk_token_id(1)
    writer.add_bos_token_id(2)
    writer.add_uint32("tokenizer.ggml.cls_token_id", 2)
    writer.add_sep_token_id(3)
    writer.add_mask_token_id(4)

    tensors = {
        "token_embd.weight": weights(len(vocab), width),
        "token_types.weight": weights(2, width),
        "position_embd.weight": weights(n_ctx, width),
        "token_embd_norm.weight": np.ones(width, np.float32),
        "token_embd_norm.bias": np.zeros(width, np.float32),
        "cls.weight": weights(width, width),
        "cls.bias": weights(width),
        "cls.output.weight": weights(1, width),
        "cls.output.bias": np.array([score_offset], np.float32),
    }
    tensors |= _encoder_block(
        "blk.0",
        ("attn_q", "attn_k", "attn_v", "attn_output"),
        ("attn_output_norm", "layer_output_norm"),
        width,
        ff,
        weights,
    )
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    _finish(writer)
    return vocab


def _encoder_block(
    prefix: str,
    attention: tuple[str, ...],
    norms: tuple[str, ...],
    width: int,
    ff: int,
    weights: Callable[..., np.ndarray],
) -> dict[str, np.ndarray]:
    """One encoder layer's tensors (attention projections, two layer norms, the feed-forward pair) under
    the names each architecture's loader wants; the random weights are drawn in one fixed order."""
    tensors: dict[str, np.ndarray] = {}
    for name in attention:
        tensors[f"{prefix}.{name}.weight"] = weights(width, width)
        tensors[f"{prefix}.{name}.bias"] = weights(width)
    for name in norms:
        tensors[f"{prefix}.{name}.weight"] = np.ones(width, np.float32)
        tensors[f"{prefix}.{name}.bias"] = np.zeros(width, np.float32)
    tensors[f"{prefix}.ffn_up.weight"] = weights(ff, width)
    tensors[f"{prefix}.ffn_up.bias"] = weights(ff)
    tensors[f"{prefix}.ffn_down.weight"] = weights(width, ff)
    tensors[f"{prefix}.ffn_down.bias"] = weights(width)
    return tensors


def _finish(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
