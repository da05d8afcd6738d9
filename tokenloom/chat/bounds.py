"""The per-render budget (time, characters) and the checks that keep template operations inside it.

Every check runs *before* the expensive operation, so a bomb fails without allocating. Sizes are
lower bounds of the text a value becomes, so a check never refuses what would have fitted.
Knows nothing of Jinja or chat messages.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tokenloom.errors import TemplateError

MAX_INT_BITS = 4096  # no chat template needs bigger numbers; stops 10**(10**9) and repeated squaring
_PAD_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Bounds of one render; a bound broken raises TemplateError."""

    timeout_s: float = 2.0
    max_output_chars: int = 4 * 1024 * 1024  # also caps every intermediate string, list or format


@dataclass(frozen=True, slots=True)
class _Budget:
    deadline: float
    max_chars: int


_DEFAULT = _Budget(deadline=float("inf"), max_chars=RenderLimits().max_output_chars)
_budget: ContextVar[_Budget] = ContextVar("tokenloom_chat_budget", default=_DEFAULT)


class BudgetExceeded(TemplateError):
    """The render (or a whole series of renders, such as capability probes) ran out of time."""


@contextmanager
def bounded(limits: RenderLimits) -> Iterator[None]:
    """Apply `limits` to every template evaluation in this context (thread- and task-local).

    Nested budgets never extend an outer deadline: probing a template is bounded as a whole.
    """
    deadline = min(_budget.get().deadline, time.monotonic() + limits.timeout_s)
    token = _budget.set(_Budget(deadline, limits.max_output_chars))
    try:
        yield
    finally:
        _budget.reset(token)


def max_chars() -> int:
    return _budget.get().max_chars


def check_deadline() -> None:
    """Raise if the current render has used up its time budget."""
    if time.monotonic() > _budget.get().deadline:
        raise BudgetExceeded("chat template exceeded its time budget")


def check_size(size: int, what: str) -> None:
    """Raise before building a string or list longer than the current cap."""
    cap = _budget.get().max_chars
    if size > cap:
        raise TemplateError(f"chat template {what} would exceed the size cap ({size} > {cap} characters)")


def check_width(width: Any, what: str) -> None:
    """Padding, indentation and format widths count against the size cap."""
    if isinstance(width, int | float) and width > 0:
        check_size(int(width), what)


def text_size(value: Any, limit: int | None = None) -> int:
    """A lower bound of `len(str(value))`, counted only until it passes `limit`."""
    limit = _budget.get().max_chars if limit is None else limit
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            total += 2 + len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 1
    return total


def check_text(value: Any, what: str) -> None:
    """Raise before turning a (nested) value into text longer than the cap."""
    check_size(text_size(value), what)


def _check_int(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise TemplateError(f"chat template integer exceeds {MAX_INT_BITS} bits")
    return value


def bounded_mul(left: Any, right: Any) -> Any:
    """`*`: repetition of strings and lists, and products of integers, within bounds."""
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int):
            check_size(len(seq) * max(count, 0), "repetition")
    both_int = isinstance(left, int) and isinstance(right, int)
    if both_int and abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS:
        raise TemplateError(f"chat template integer exceeds {MAX_INT_BITS} bits")
    return left * right


def bounded_pow(left: Any, right: Any) -> Any:
    """`**`: integer powers are sized before they are computed."""
    big = isinstance(left, int) and isinstance(right, int) and abs(left) > 1
    if big and abs(left).bit_length() * right > MAX_INT_BITS * 2:
        raise TemplateError(f"chat template power {left}**{right} is too large")
    return _check_int(left**right)


def bounded_add(left: Any, right: Any) -> Any:
    """`+`: string and list concatenation within the cap."""
    if isinstance(left, str | list | tuple) and type(left) is type(right):
        check_size(len(left) + len(right), "concatenation")
    return _check_int(left + right)


def check_percent_format(fmt: str, args: Any) -> None:
    """`'%999999999s' % x` and `'%*d' % (10**9, 1)` pad to any width: bound widths and the result."""
    specs = [m for m in _PERCENT_SPEC.finditer(fmt) if m.group(0) != "%%"]
    for match in specs:
        for field in match.groups():
            if field == "*":
                raise TemplateError("chat template uses '*' widths in %-formatting, which are not allowed")
            if field is not None:
                check_width(int(field), "format width")
    if isinstance(args, Mapping):  # named specs may repeat a value
        largest = max((text_size(v) for v in args.values()), default=0)
        check_size(len(fmt) + len(specs) * largest, "format result")
    else:
        check_size(len(fmt) + text_size(args), "format result")


def bounded_mod(left: Any, right: Any) -> Any:
    """`%`: string formatting with bounded widths and result."""
    if isinstance(left, str):
        check_percent_format(left, right)
    return left % right


def check_brace_format(fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """`'{:>999999999}'.format(x)` and `'{0}{0}{0}'.format(big)`: bound widths and the result."""
    try:
        fields = [f for f in string.Formatter().parse(fmt) if f[1] is not None]
    except ValueError as exc:
        raise TemplateError(f"chat template has a bad format string: {exc}") from exc
    for _, _, spec, _ in fields:
        if spec and "{" in spec:
            raise TemplateError("chat template uses nested format widths, which are not allowed")
        for digits in _DIGITS.findall(spec or ""):
            check_width(int(digits), "format width")
    values = [*args, *kwargs.values()]
    if all(name == "" for _, name, _, _ in fields):  # automatic numbering uses each value once
        check_size(len(fmt) + sum(text_size(v) for v in values), "format result")
    else:
        largest = max((text_size(v) for v in values), default=0)
        check_size(len(fmt) + len(fields) * largest, "format result")


def check_method_call(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """Pre-checks for the str and list methods whose result can outgrow their inputs."""
    owner = getattr(method, "__self__", None)
    name = getattr(method, "__name__", "")
    if isinstance(owner, list) and args:
        if name in ("append", "insert"):
            check_size(len(owner) + 1, "list")
        elif name == "extend" and hasattr(args[0], "__len__"):
            check_size(len(owner) + len(args[0]), "list")
    if not isinstance(owner, str):
        return
    if name in _PAD_METHODS and args:
        check_width(args[0], f"str.{name} width")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        check_width(owner.count("\t") * tab if isinstance(tab, int) else 0, "str.expandtabs result")
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        hits = owner.count(args[0]) if args[0] else len(owner) + 1
        check_size(len(owner) + hits * len(args[1]), "str.replace result")
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        check_size(len(owner) * longest, "str.translate result")
    elif name == "join" and args and isinstance(args[0], list | tuple):
        check_size(sum(text_size(x) for x in args[0]) + len(owner) * (len(args[0]) - 1), "str.join result")
