"""The sandboxed Jinja2 environment HF chat templates expect (helpers, filters, loop controls).

Templates come from model files and are untrusted; they are only ever compiled here.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokenloom.errors import TemplateError


def _raise_exception(message: str) -> None:
    raise TemplateError(f"chat template raised: {message}", status=400)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _tojson(
    value: Any, indent: int | None = None, ensure_ascii: bool = False, sort_keys: bool = False
) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


def make_environment() -> ImmutableSandboxedEnvironment:
    """A fresh sandbox with the globals and filters transformers provides to chat templates."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols"],
        undefined=jinja2.Undefined,
    )
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.filters["tojson"] = _tojson
    return env


@lru_cache(maxsize=64)
def compile_template(source: str) -> jinja2.Template:
    """Compile once per template text; a syntax error becomes a TemplateError."""
    try:
        return make_environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"chat template does not compile: {exc}") from exc
