"""Command line: `tokenloom serve` and the template tools."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from tokenloom import __version__
from tokenloom.engine.engine import CACHE_TYPES, EngineConfig


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


class DefaultsShown(argparse.HelpFormatter):
    """Appends "(default: X)" to an option's help where X says something (not None, not a flag's False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.default != []
        if shown and "default" not in text and action.option_strings:
            text += " (default: %(default)s)"
        return text


SERVE_EPILOG = """environment:
  TOKENLOOM_API_KEY   the API key when --api-key is not given (never shown here)

The server prints "tokenloom ready: <url>" once the model is loaded; /health answers 503 until then."""


def add_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="start the server (OpenAI, Responses and AG-UI APIs)",
        description="Serve one GGUF model over HTTP.",
        formatter_class=DefaultsShown,
        epilog=SERVE_EPILOG,
    )
    serve.add_argument("--model", "-m", help="GGUF file (default: the packaged Gemma 3 270M)")
    serve.add_argument(
        "--alias",
        action="append",
        default=[],
        help="a name for the model (repeatable); the first is the id /v1/models reports (default: file name)",
    )
    serve.add_argument(
        "--strict-model-name",
        action="store_true",
        help="a request naming another model is a 404 (default: the loaded model serves any name)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on")
    serve.add_argument(
        "--parallel", "-np", type=_positive, default=4, help="slots: requests decoded together in one batch"
    )
    serve.add_argument(
        "--queue-size",
        type=int,
        default=16,
        help="requests that may wait for a slot; beyond parallel + queue the answer is 429 with Retry-After",
    )
    serve.add_argument(
        "--ctx-size", "-c", type=_positive, default=4096, help="context of one slot (prompt + output), tokens"
    )
    serve.add_argument(
        "--threads",
        "-t",
        type=_positive,
        default=None,
        help="llama.cpp threads (default: llama.cpp's choice)",
    )
    serve.add_argument(
        "--batch-size",
        "-b",
        type=_positive,
        default=512,
        help="tokens decoded per step; prompts are prefilled in chunks of it",
    )
    serve.add_argument("--cache-type-k", choices=sorted(CACHE_TYPES), default="f16", help="K-cache precision")
    serve.add_argument(
        "--cache-type-v",
        choices=sorted(CACHE_TYPES),
        default="f16",
        help="V-cache precision (a quantized V cache turns flash attention on)",
    )
    cache = serve.add_mutually_exclusive_group()
    cache.add_argument(
        "--system-prompt-cache", action="store_true", help="keep the system prompt in sequence 0"
    )
    cache.add_argument(
        "--first-message-cache", action="store_true", help="keep the first user message in seq 0"
    )
    serve.add_argument(
        "--cache-min-tokens",
        type=int,
        default=100,
        help="shortest system / first message kept in sequence 0",
    )
    serve.add_argument(
        "--deterministic",
        action="store_true",
        help="flash attention off: a request's logits never depend on its batch neighbours, so greedy "
        "and seeded output repeat under load (default: flash attention where llama.cpp supports it)",
    )
    serve.add_argument(
        "--no-prefix-reuse",
        action="store_true",
        help="never reuse KV across requests (default: reuse the longest prefix any sequence holds)",
    )
    serve.add_argument(
        "--chat-template-file", type=Path, help="a Jinja chat template to use (default: the GGUF's own)"
    )
    serve.add_argument(
        "--chat-format",
        choices=["auto", "jinja", "harmony"],
        default="auto",
        help="harmony is gpt-oss's format; auto detects it from the template or architecture",
    )
    serve.add_argument(
        "--reasoning-format",
        choices=["auto", "none"],
        default="auto",
        help="none leaves reasoning in the content verbatim (tool calls are still parsed)",
    )
    serve.add_argument(
        "--api-key",
        default=None,
        help="require this key as `Authorization: Bearer` (default: $TOKENLOOM_API_KEY, else no key)",
    )
    serve.add_argument(
        "--cors-origin", action="append", default=[], help="allowed browser origin (repeatable)"
    )
    serve.add_argument(
        "--allow-request-templates",
        action="store_true",
        help="accept a request's own `chat_template` (default: refused with a 400 naming the field)",
    )
    serve.add_argument(
        "--stream-backlog",
        type=_positive,
        default=64,
        help="events a streaming client may fall behind before its slot pauses (it resumes as the "
        "client reads; other slots never wait for it)",
    )
    serve.add_argument(
        "--send-buffer-kib",
        type=int,
        default=64,
        help="kernel send buffer per connection, KiB (0: the kernel's own, which grows to megabytes); "
        "with --stream-backlog it bounds what a slow client holds back",
    )
    serve.add_argument(
        "--number-digits",
        type=_positive,
        default=20,
        help="digits a structured-output number may have before and after its point where the schema's "
        "bounds need no more (a weak model cannot loop inside a number)",
    )
    serve.add_argument(
        "--mask-timeout",
        type=_positive_seconds,
        default=5.0,
        help="seconds one structured-output mask may take; a request whose schema or pattern needs more "
        "ends with a 400 (code constraint_timeout). Masks are computed beside the batch, so other "
        "requests never wait for them",
    )
    serve.add_argument(
        "--constraint-budget",
        type=_positive_seconds,
        default=60.0,
        help="seconds of structured-output work one request may use in total (same error past it)",
    )
    serve.add_argument(
        "--embeddings",
        action="store_true",
        help="serve an embedding model (e5, BGE, ...): /v1/embeddings, /api/embed and rank-pooling "
        "/v1/rerank only, with no generation engine (chat and completion endpoints answer 501)",
    )
    serve.add_argument(
        "--embed-batch",
        type=_positive,
        default=512,
        help="tokens the embedding context decodes together, also the longest embedding input; costs "
        "about 2 MiB of memory per token with a 262k vocabulary (llama.cpp computes every token's logits)",
    )
    serve.add_argument(
        "--pooling",
        choices=["mean", "cls", "last", "rank"],
        default=None,
        help="how /v1/embeddings pools a sequence (default: what the GGUF says, else mean)",
    )
    serve.add_argument(
        "--no-normalize",
        action="store_true",
        help="return embeddings as pooled, without L2 normalisation (default: unit vectors)",
    )
    serve.add_argument(
        "--mmproj",
        default=None,
        help="a vision projector GGUF for the model (llama.cpp's mtmd): chat messages may then hold "
        "images (PNG, JPEG, WebP as data: URIs or base64)",
    )
    serve.add_argument(
        "--allow-remote-media",
        action="store_true",
        help="fetch http(s) image URLs named in requests (default: refused with a 400; the server "
        "fetches nothing on a client's say-so)",
    )
    serve.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="log verbosity"
    )
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from tokenloom.constrain.number import set_number_digits
    from tokenloom.pipeline.chat_format import CacheMode
    from tokenloom.server.app import create_app
    from tokenloom.server.state import ServerConfig, ServerState

    cache_mode: CacheMode = (
        "system" if args.system_prompt_cache else "first" if args.first_message_cache else "none"
    )
    config = ServerConfig(
        model_path=args.model,
        model_aliases=tuple(args.alias),
        strict_model_name=args.strict_model_name,
        engine=EngineConfig(
            n_parallel=args.parallel,
            n_ctx_slot=args.ctx_size,
            n_batch=args.batch_size,
            n_threads=args.threads,
            cache_type_k=args.cache_type_k,
            cache_type_v=args.cache_type_v,
            max_queue=args.queue_size,
            prefix_reuse=not args.no_prefix_reuse,
            deterministic=args.deterministic,
            max_backlog=args.stream_backlog,
            mask_timeout=args.mask_timeout,
            constraint_budget=args.constraint_budget,
            mmproj=args.mmproj,
        ),
        chat_template_file=args.chat_template_file,
        cache_mode=cache_mode,
        cache_min_tokens=args.cache_min_tokens,
        api_key=args.api_key or os.environ.get("TOKENLOOM_API_KEY") or None,
        cors_origins=tuple(args.cors_origin),
        reasoning_format=args.reasoning_format,
        chat_format=args.chat_format,
        allow_request_templates=args.allow_request_templates,
        pooling=args.pooling,
        embeddings_only=args.embeddings,
        embed_batch=args.embed_batch,
        normalize_embeddings=not args.no_normalize,
        allow_remote_media=args.allow_remote_media,
    )

    def announce(state: ServerState) -> None:
        print(f"tokenloom ready: http://{args.host}:{args.port}/v1 (model {state.model_id})", flush=True)

    set_number_digits(args.number_digits)
    app = create_app(config, on_ready=announce)
    server_config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5
    )
    uvicorn.Server(server_config).run(sockets=[listening_socket(args.host, args.port, args.send_buffer_kib)])
    return 0


def listening_socket(host: str, port: int, send_buffer_kib: int) -> socket.socket:
    """The server's socket, with a bounded send buffer that accepted connections inherit: the kernel
    otherwise grows a slow client's buffer to megabytes, hiding it from the per-request backpressure."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer_kib > 0:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_kib * 1024)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _template_commands() -> Any:
    """The auto-parser's `template analyze|parse` commands, when that package provides them."""
    try:
        module = importlib.import_module("tokenloom.cli.debugger")
    except ImportError:
        return None
    return getattr(module, "register", None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenloom", description="A local LLM server on llama.cpp.")
    parser.add_argument("--version", action="version", version=f"tokenloom {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve(subparsers)
    register_template = _template_commands()
    if register_template is not None:
        register_template(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(getattr(args, "log_level", "info")).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
