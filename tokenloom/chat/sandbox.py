"""The bounded Jinja sandbox: the immutable sandbox plus deadline and size checks compiled in.

Jinja's sandbox stops attribute escapes but not a template that loops forever or builds a
gigabyte string. Here every call and every loop iteration checks the clock, and every operator,
join and output buffer that can grow checks the size cap (see bounds.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokenloom.chat.bounds import (
    bounded_add,
    bounded_mod,
    bounded_mul,
    bounded_pow,
    check_brace_format,
    check_deadline,
    check_method_call,
    check_size,
    check_text,
    max_chars,
)
from tokenloom.errors import TemplateError

# Mutators real templates call (Kimi K2: `ids.append(...)`, `ids.pop(0)`); llama.cpp allows them, the
# immutable sandbox does not. Render inputs are deep copies, so only the render's own data can change.
_ALLOWED_MUTATORS: dict[type, frozenset[str]] = {
    list: frozenset({"append", "pop", "extend", "insert"}),
    dict: frozenset({"pop", "setdefault"}),
}


def check_output_value(value: Any) -> Any:
    """Jinja `finalize` hook: a container printed with `{{ }}` must fit before it becomes text."""
    if not isinstance(value, str):
        check_text(value, "printed value")
    return value


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus deadline checks on calls and loops and size checks on growth."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("finalize", check_output_value)
        super().__init__(*args, **kwargs)
        self.code_generator_class = BoundedCodeGenerator
        self.binop_table.update({"+": bounded_add, "*": bounded_mul, "**": bounded_pow, "%": bounded_mod})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """The immutable sandbox, except the few list/dict mutators templates rely on."""
        if attr in _ALLOWED_MUTATORS.get(type(obj), ()):
            return True
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Every call (macros included) checks the clock, so recursion without loops also stops."""
        check_deadline()
        check_method_call(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, str | list | tuple):  # the net under the pre-checks (e.g. 'ß'.upper())
            check_size(len(result), "call result")
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Sandboxed `str.format` / `format_map`, with widths and result size bounded."""
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        fmt: str = value.__self__
        is_map = value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            mapping = args[0] if is_map and args and isinstance(args[0], dict) else kwargs
            check_brace_format(fmt, () if is_map else args, mapping)
            return wrapper(*args, **kwargs)

        return bounded_format

    def concat(self, parts: Iterable[Any]) -> str:
        """Joins every output buffer (root, macros, set blocks) while counting characters."""
        cap = max_chars()
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
        texts = []
        for part in parts:
            if not isinstance(part, str):
                check_text(part, "concatenated value")
            texts.append(str(part))
        return self.concat(texts)


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
