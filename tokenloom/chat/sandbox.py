"""Resource bounds for untrusted chat templates: time, output size and arithmetic/size bombs.

Jinja's sandbox stops attribute escapes but not a template that loops forever or builds a
gigabyte string; this module adds those bounds. It knows nothing of chat messages.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokenloom.errors import TemplateError

MAX_INT_BITS = 4096  # no chat template needs bigger numbers; stops 10**10**9 and repeated squaring
_PAD_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
# Mutators real templates call (Kimi K2: `ids.append(...)`, `ids.pop(0)`); llama.cpp allows them, the
# immutable sandbox does not. Render inputs are deep copies, so only template-local data can change.
_ALLOWED_MUTATORS: dict[type, frozenset[str]] = {
    list: frozenset({"append", "pop", "extend", "insert"}),
    dict: frozenset({"pop", "setdefault"}),
}
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Bounds of one render; a bound broken raises TemplateError."""

    timeout_s: float = 2.0
    max_output_chars: int = 4 * 1024 * 1024  # also the cap on any one intermediate string or list


@dataclass(frozen=True, slots=True)
class _Budget:
    deadline: float
    max_chars: int


_NO_BUDGET = _Budget(deadline=float("inf"), max_chars=RenderLimits().max_output_chars)
_budget: ContextVar[_Budget] = ContextVar("tokenloom_chat_budget", default=_NO_BUDGET)


@contextmanager
def bounded(limits: RenderLimits) -> Iterator[None]:
    """Apply `limits` to every template evaluation in this context (thread- and task-local)."""
    token = _budget.set(_Budget(time.monotonic() + limits.timeout_s, limits.max_output_chars))
    try:
        yield
    finally:
        _budget.reset(token)


def check_deadline() -> None:
    """Raise if the current render has used up its time budget."""
    if time.monotonic() > _budget.get().deadline:
        raise TemplateError("chat template exceeded its time budget")


def check_size(size: int, what: str) -> None:
    """Raise before building a string or list longer than the current cap."""
    cap = _budget.get().max_chars
    if size > cap:
        raise TemplateError(f"chat template {what} would exceed the size cap ({size} > {cap} characters)")


def check_width(width: Any, what: str) -> None:
    """Padding, indentation and format widths count against the size cap."""
    if isinstance(width, int | float) and width > 0:
        check_size(int(width), what)


def _sized(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple) else 0


def _check_int(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise TemplateError(f"chat template integer exceeds {MAX_INT_BITS} bits")
    return value


def _mul(left: Any, right: Any) -> Any:
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple) and isinstance(count, int):
            check_size(len(seq) * max(count, 0), "repetition")
    both_int = isinstance(left, int) and isinstance(right, int)
    if both_int and abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS:
        raise TemplateError(f"chat template integer exceeds {MAX_INT_BITS} bits")
    return left * right


def _pow(left: Any, right: Any) -> Any:
    big = isinstance(left, int) and isinstance(right, int) and abs(left) > 1
    if big and abs(left).bit_length() * right > MAX_INT_BITS * 2:
        raise TemplateError(f"chat template power {left}**{right} is too large")
    return _check_int(left**right)


def _add(left: Any, right: Any) -> Any:
    if isinstance(left, str | list | tuple) and type(left) is type(right):
        check_size(len(left) + len(right), "concatenation")
    return _check_int(left + right)


def check_percent_format(fmt: str) -> None:
    """`'%*d' % (10**9, 1)` and `'%999999999s'` pad to any width: bound the widths first."""
    for match in _PERCENT_SPEC.finditer(fmt):
        for field in match.groups():
            if field == "*":
                raise TemplateError("chat template uses '*' widths in %-formatting, which are not allowed")
            if field is not None:
                check_width(int(field), "format width")


def check_brace_format(fmt: str) -> None:
    """`'{:>999999999}'.format(x)` pads to any width: bound literal widths, forbid nested ones."""
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError as exc:
        raise TemplateError(f"chat template has a bad format string: {exc}") from exc
    for _, _, spec, _ in fields:
        if not spec:
            continue
        if "{" in spec:
            raise TemplateError("chat template uses nested format widths, which are not allowed")
        for digits in _DIGITS.findall(spec):
            check_width(int(digits), "format width")


def _mod(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        check_percent_format(left)
    return left % right


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus deadline checks on calls and loops and size checks on growth."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.binop_table.update({"+": _add, "*": _mul, "**": _pow, "%": _mod})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """The immutable sandbox, except the few list/dict mutators templates rely on."""
        if attr in _ALLOWED_MUTATORS.get(type(obj), ()):
            return True
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Every call (macros included) checks the clock, so recursion without loops also stops."""
        check_deadline()
        _check_method(__obj, args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Sandboxed `str.format` / `format_map`, with widths bounded."""
        wrapper = super().wrap_str_format(value)
        if wrapper is not None:
            check_brace_format(value.__self__)
        return wrapper

    def concat(self, parts: Iterable[Any]) -> str:
        """Joins every output buffer (root, macros, set blocks) while counting characters."""
        cap = _budget.get().max_chars
        out: list[str] = []
        total = 0
        for part in parts:
            total += len(part)
            if total > cap:
                raise TemplateError(f"chat template output exceeds the size cap ({cap} characters)")
            out.append(part)
        return "".join(out)

    def bounded_join(self, parts: Iterable[Any]) -> str:
        """The `~` operator, with the size cap."""
        return self.concat(str(part) for part in parts)


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, list) and args:
        name = getattr(obj, "__name__", "")
        if name in ("append", "insert"):
            check_size(len(owner) + 1, "list")
        elif name == "extend":
            check_size(len(owner) + len(args[0]) if hasattr(args[0], "__len__") else 0, "list")
        return
    if not isinstance(owner, str):
        return
    name = getattr(obj, "__name__", "")
    if name in _PAD_METHODS and args:
        check_width(args[0], f"str.{name} width")
    elif name == "expandtabs":
        tab = args[0] if args else kwargs.get("tabsize", 8)
        check_width(owner.count("\t") * tab if isinstance(tab, int) else 0, "str.expandtabs")
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        hits = owner.count(args[0]) if args[0] else len(owner) + 1
        check_size(len(owner) + hits * len(args[1]), "str.replace result")
    elif name == "join" and args and isinstance(args[0], list | tuple):
        check_size(sum(map(_sized, args[0])) + len(owner) * len(args[0]), "str.join result")


def guard_iter(iterable: Any) -> Iterator[Any]:
    """Wraps every `{% for %}` iterable so that pure loops with no output still stop on time."""
    for item in iterable:
        check_deadline()
        yield item


class BoundedCodeGenerator(CodeGenerator):
    """Routes loop iterables through `guard_iter` and `~` through the size-capped join."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        # Rewrite before jinja collects the template's imported names.
        guard = "tokenloom.chat.sandbox.guard_iter"
        for loop in node.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.ImportedName(guard), [loop.iter], [], None, None, lineno=loop.lineno)
        super().visit_Template(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")
