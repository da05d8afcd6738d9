"""The sandboxed Jinja2 environment HF chat templates expect (helpers, filters, tags, loop controls).

Templates come from model files and are untrusted; they are only ever compiled here, into a
`BoundedEnvironment` (see sandbox.py). Same semantics as transformers' chat-template rendering.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import jinja2
from jinja2 import meta, nodes
from jinja2.ext import Extension
from jinja2.parser import Parser

from tokenloom.chat.filters import bounded_filters, lipsum
from tokenloom.chat.sandbox import BoundedEnvironment
from tokenloom.errors import TemplateError

MAX_TEMPLATE_CHARS = 1024 * 1024  # the largest real chat templates are ~30 KB


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
    env.globals["lipsum"] = lipsum
    env.filters.update(bounded_filters(env.filters))
    return env


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
