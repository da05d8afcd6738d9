"""The sandboxed Jinja2 environment HF chat templates expect (helpers, filters, tags, loop controls).

Templates come from model files and are untrusted; they are only ever compiled here, into a
`BoundedEnvironment` (see sandbox.py). Same semantics as transformers' chat-template rendering.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.ext import Extension
from jinja2.filters import do_center, do_format, do_indent, do_join, do_replace, do_sum, make_attrgetter
from jinja2.parser import Parser
from jinja2.utils import generate_lorem_ipsum

from tokenloom.chat.bounds import check_percent_format, check_size, check_text, check_width, text_size
from tokenloom.chat.sandbox import BoundedEnvironment
from tokenloom.errors import TemplateError

MAX_TEMPLATE_CHARS = 1024 * 1024  # the largest real chat templates are ~30 KB
MAX_JSON_INDENT = 64


class GenerationTag(Extension):
    """`{% generation %}…{% endgeneration %}` marks assistant text for training masks; render it as-is."""

    tags = {"generation"}  # noqa: RUF012 (jinja's Extension API)

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _raise_exception(message: str) -> None:
    raise TemplateError(f"chat template raised: {message}", status=400)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' `tojson`: plain json.dumps (no HTML escaping), with a bounded indent."""
    check_text(value, "tojson value")
    if isinstance(indent, str):
        check_width(len(indent) * (MAX_JSON_INDENT // 8 + 1), "tojson indent")
    elif indent is not None and (not isinstance(indent, int) or indent > MAX_JSON_INDENT):
        raise TemplateError(f"chat template tojson indent must be an int <= {MAX_JSON_INDENT}")
    text = json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=tuple(separators) if separators is not None else None,  # type: ignore[arg-type]
        sort_keys=sort_keys,
    )
    check_size(len(text), "tojson result")
    return text


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja's lorem ipsum generator, with its size (up to ~12 characters a word) bounded first."""
    if isinstance(n, int) and isinstance(max, int):
        check_size(n * max * 12, "lipsum result")
    return str(generate_lorem_ipsum(n, html, min, max))


def _center(value: Any, width: int = 80) -> str:
    check_width(width, "center width")
    return do_center(value, width)


def _indent(value: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    unit = len(width) if isinstance(width, str) else width
    check_width(unit * (str(value).count("\n") + 1) + len(str(value)), "indent result")
    return do_indent(value, width, first, blank)


def _format(value: str, *args: Any, **kwargs: Any) -> str:
    check_percent_format(str(value), kwargs or args)
    return do_format(value, *args, **kwargs)


@jinja2.pass_eval_context
def _join(eval_ctx: Any, value: Any, d: str = "", attribute: str | int | None = None) -> str:
    items = list(value)
    if attribute is not None:
        items = list(map(make_attrgetter(eval_ctx.environment, attribute), items))
    check_size(sum(text_size(x) for x in items) + len(d) * (len(items) - 1), "join result")
    return str(do_join(eval_ctx, items, d))


@jinja2.pass_environment
def _sum(env: Any, iterable: Any, attribute: str | int | None = None, start: Any = 0) -> Any:
    """Summing lists or tuples concatenates them: size that first."""
    items = list(iterable)
    if attribute is not None:
        items = list(map(make_attrgetter(env, attribute), items))
    if isinstance(start, list | tuple) or any(isinstance(x, list | tuple) for x in items):
        check_size(sum(len(x) for x in items if isinstance(x, list | tuple)), "sum result")
    return do_sum(env, items, start=start)


@jinja2.pass_eval_context
def _replace(eval_ctx: Any, s: str, old: str, new: str, count: int | None = None) -> str:
    text = str(s)
    hits = text.count(str(old)) if old else len(text) + 1
    check_size(len(text) + hits * len(str(new)), "replace result")
    return str(do_replace(eval_ctx, s, old, new, count))


def make_environment() -> BoundedEnvironment:
    """A fresh bounded sandbox with the globals, filters and tags transformers gives chat templates."""
    env = BoundedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols", GenerationTag],
        optimized=False,  # no constant folding: compiling must not evaluate template arithmetic
    )
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["lipsum"] = _lipsum
    env.filters.update(
        tojson=_tojson, center=_center, indent=_indent, format=_format, join=_join, replace=_replace, sum=_sum
    )
    for name, function in env.filters.items():
        if name not in _NON_TEXT_FILTERS:
            env.filters[name] = _text_guarded(function)
    return env


# Filters that never turn their input into text; every other filter's input must fit as text first
# (`{{ ([big] * 1000) | upper }}` would otherwise build str(list) at any size).
_NON_TEXT_FILTERS = frozenset(
    {"length", "count", "first", "last", "default", "d", "list", "select", "reject", "map", "selectattr"}
    | {"rejectattr", "sort", "reverse", "unique", "items", "dictsort", "batch", "slice", "sum", "min"}
    | {"max", "groupby", "attr", "random", "abs", "round", "int", "float", "bool", "join", "tojson"}
)


def _text_guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    # pass_context / pass_eval_context / pass_environment filters get that object first.
    value_index = 0 if getattr(function, "jinja_pass_arg", None) is None else 1

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > value_index and not isinstance(args[value_index], str):
            check_text(args[value_index], "filter input")
        return function(*args, **kwargs)

    return guarded


@dataclass(frozen=True, slots=True)
class CompiledTemplate:
    """A compiled template and the free variables it reads (e.g. `tools`, `functions`, `enable_thinking`)."""

    template: jinja2.Template
    variables: frozenset[str]


_ENV = make_environment()


@lru_cache(maxsize=128)
def compile_template(source: str) -> CompiledTemplate:
    """Compile once per template text; a syntax error becomes a TemplateError."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateError(f"chat template is too large ({len(source)} > {MAX_TEMPLATE_CHARS} characters)")
    try:
        ast = _ENV.parse(source)
        variables = frozenset(meta.find_undeclared_variables(ast))
        return CompiledTemplate(_ENV.from_string(ast), variables)
    except (jinja2.TemplateSyntaxError, RecursionError) as exc:
        raise TemplateError(f"chat template does not compile: {type(exc).__name__}: {exc}") from exc
