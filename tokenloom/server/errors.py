"""Every failure as the OpenAI error object openai-python reads: {"error": {message, type, param, code}}.

Also the strict JSON body reader: NaN/Infinity, giant numbers, deep nesting, invalid UTF-8 and lone
surrogates are refused here, before pydantic or C ever see them.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tokenloom.errors import InvalidRequest, Overloaded, TokenloomError

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)

MAX_BODY_BYTES = 32 << 20
MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def error_body(
    message: str, type_: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_response(exc: TokenloomError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Overloaded) else None
    body = error_body(exc.message, exc.type, param=exc.param, code=exc.code)
    return JSONResponse(body, status_code=exc.status, headers=headers)


async def tokenloom_error_handler(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TokenloomError)
    return error_response(exc)


async def http_error_handler(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    type_ = "invalid_request_error" if exc.status_code < 500 else "server_error"
    return JSONResponse(error_body(str(exc.detail), type_), status_code=exc.status_code)


async def unexpected_error_handler(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error on %s", request.url.path)
    if request.url.path.startswith("/v1/messages"):  # Anthropic's clients read their own shape
        body = {"type": "error", "error": {"type": "api_error", "message": "internal server error"}}
        return JSONResponse(body, status_code=500)
    return JSONResponse(error_body("internal server error", "server_error"), status_code=500)


class _NonFinite:
    """Stands in for NaN/Infinity while parsing, so the check that follows can name the field."""

    def __init__(self, name: str) -> None:
        self.name = name


def _reject_constant(name: str) -> Any:
    return _NonFinite(name)


def _check_depth_and_text(value: Any, path: str, depth: int = 0) -> None:
    """Deep nesting and lone surrogates are refused, naming where they are."""
    if depth > MAX_DEPTH:
        raise InvalidRequest(f"the body nests deeper than {MAX_DEPTH} levels", param=path or None)
    if isinstance(value, _NonFinite):
        raise InvalidRequest(f"{path or 'body'}: {value.name} is not valid JSON", param=path or None)
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise InvalidRequest("a string holds a lone UTF-16 surrogate", param=path or None)
    elif isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                raise InvalidRequest("a key holds a lone UTF-16 surrogate", param=path or None)
            _check_depth_and_text(item, f"{path}.{key}" if path else key, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_depth_and_text(item, f"{path}[{index}]", depth + 1)


def parse_json_body(raw: bytes) -> Any:
    """Strict JSON: UTF-8 only, no NaN/Infinity, bounded numbers and depth."""
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidRequest(f"the body is larger than {MAX_BODY_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"the body is not valid UTF-8 (byte {exc.start})") from exc
    if _quick_depth(text) > MAX_DEPTH:
        raise InvalidRequest(f"the body nests deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(
            text, parse_constant=_reject_constant, parse_int=_bounded_int, parse_float=_bounded_float
        )
    except InvalidRequest:
        raise
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest(f"the body is not valid JSON: {exc}") from exc
    _check_depth_and_text(value, "")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 40:
        raise InvalidRequest(f"a number has {len(text)} digits; at most 40 are accepted")
    return int(text)


def _bounded_float(text: str) -> float:
    value = float(text)
    if len(text) > 64 or value in (float("inf"), float("-inf")):
        raise InvalidRequest(f"a number ({text[:20]}...) is out of range")
    return value


def _quick_depth(text: str) -> int:
    """Bracket depth ignoring strings, so json.loads never recurses deeply."""
    depth = best = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            best = max(best, depth)
            if best > MAX_DEPTH:
                return best
        elif char in "]}":
            depth -= 1
    return best


def _loc_to_param(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif isinstance(item, str) and not item.startswith(
            ("function-", "list[", "str", "literal", "tagged")
        ):
            if item in ("int", "float", "bool", "dict", "list", "NamedToolChoice"):
                continue
            parts.append(("." if parts else "") + item)
    return "".join(parts)


def validate_body(model: type[ModelT], data: Any) -> ModelT:
    """Pydantic validation whose first error becomes a 400 naming the field (e.g. messages[1].role)."""
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # a union reports one error per branch; the deepest location names the field most exactly
        first = max(errors, key=lambda e: len(_loc_to_param(tuple(e["loc"]))))
        param = _loc_to_param(tuple(first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        raise InvalidRequest(f"{param or 'body'}: {message}", param=param or None) from exc
