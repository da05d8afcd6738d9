"""Jinja's filters with bounds: each checks the size (or item count) of what it would build first.

transformers' `tojson` (json.dumps without HTML escaping) replaces Jinja's; the others keep Jinja's
behaviour. Filters that loop in Python over their input (sort, map, wordwrap...) take bounded inputs,
since a single filter call cannot be stopped by the render deadline.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jinja2
from jinja2.filters import (
    do_center,
    do_format,
    do_indent,
    do_join,
    do_replace,
    do_slice,
    do_sum,
    make_attrgetter,
)
from jinja2.utils import generate_lorem_ipsum

from tokenloom.chat.bounds import (
    MAX_ITEMS,
    check_items,
    check_percent_format,
    check_size,
    check_text,
    check_width,
    text_size,
)
from tokenloom.errors import TemplateError

MAX_JSON_INDENT = 64
MAX_SLOW_TEXT_CHARS = 64 * 1024  # input of filters that scan text in Python (striptags is quadratic)


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' `tojson`: plain json.dumps (no HTML escaping), with a bounded indent."""
    check_text(value, "tojson value")
    width = len(indent) if isinstance(indent, str) else indent
    if width is not None and (not isinstance(width, int) or width > MAX_JSON_INDENT):
        raise TemplateError(
            f"chat template tojson indent must be an int or string of at most {MAX_JSON_INDENT}"
        )
    text = json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=tuple(separators) if separators is not None else None,  # type: ignore[arg-type]
        sort_keys=sort_keys,
        default=_json_iterable,
    )
    check_size(len(text), "tojson result")
    return text


def _json_iterable(value: Any) -> list[Any]:
    """Jinja's `map`/`select` give generators; llama.cpp's templates pass them to tojson as lists."""
    if isinstance(value, Iterator):
        items = list(itertools.islice(value, MAX_ITEMS + 1))
        check_items(len(items), "tojson value")
        return items
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
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


def _slice(value: Any, slices: int, fill_with: Any = None) -> Any:
    check_items(slices if isinstance(slices, int) else 0, "slice count")
    return do_slice(value, slices, fill_with)


# Filters that never turn their input into text; every other filter's input must fit as text first
# (`{{ ([big] * 1000) | upper }}` would otherwise build str(list) at any size).
_NON_TEXT = frozenset(
    {"length", "count", "first", "last", "default", "d", "list", "select", "reject", "map", "selectattr"}
    | {"rejectattr", "sort", "reverse", "unique", "items", "dictsort", "batch", "slice", "sum", "min"}
    | {"max", "groupby", "attr", "random", "abs", "round", "int", "float", "bool", "join", "tojson"}
)
# Filters that visit each item in Python: at most MAX_ITEMS items.
_PER_ITEM = frozenset(
    {"sort", "unique", "dictsort", "groupby", "map", "select", "reject", "selectattr", "rejectattr"}
    | {"batch", "slice", "sum", "min", "max", "join", "items"}
)
# Filters that scan text in Python (some in quadratic time): at most MAX_SLOW_TEXT_CHARS. No chat
# template uses them on message text.
_SLOW_TEXT = frozenset({"striptags", "wordwrap", "urlize", "pprint"})


def bounded_filters(filters: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Jinja's filters with our bounded replacements, each wrapped with the input checks it needs."""
    replaced: dict[str, Callable[..., Any]] = {
        **filters,
        "tojson": tojson,
        "center": _center,
        "indent": _indent,
        "format": _format,
        "join": _join,
        "replace": _replace,
        "sum": _sum,
        "slice": _slice,
    }
    return {name: _guarded(name, function) for name, function in replaced.items()}


def _guarded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # pass_context / pass_eval_context / pass_environment filters get that object first.
    value_index = 0 if getattr(function, "jinja_pass_arg", None) is None else 1
    as_text, per_item, slow = name not in _NON_TEXT, name in _PER_ITEM, name in _SLOW_TEXT

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > value_index:
            value = args[value_index]
            if as_text and not isinstance(value, str):
                check_text(value, f"{name} filter input")
            if per_item and hasattr(value, "__len__"):
                check_items(len(value), f"{name} filter input")
            if slow and text_size(value, MAX_SLOW_TEXT_CHARS) > MAX_SLOW_TEXT_CHARS:
                raise TemplateError(
                    f"chat template {name} filter input exceeds {MAX_SLOW_TEXT_CHARS} characters"
                )
        result = function(*args, **kwargs)
        if isinstance(result, str | list):  # the net under the input checks (e.g. 'ß' | upper is 'SS')
            check_size(len(result), f"{name} filter result")
        return result

    return guarded
