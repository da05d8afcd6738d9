"""Untrusted templates: every bomb ends in a TemplateError, and the helpers behave like transformers'."""

from __future__ import annotations

import pytest

from tokenloom.chat.bounds import RenderLimits
from tokenloom.chat.jinja_env import compile_template
from tokenloom.chat.render import RESERVED_VARIABLES, render
from tokenloom.errors import InvalidRequest, TemplateError

FAST = RenderLimits(timeout_s=0.2)

BOMBS = {
    "nested_loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "loops_over_a_list": (
        "{% set r = range(100000)|list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"
    ),
    "recursive_macro": (
        "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    ),
    "endless_recursion": "{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}",
    "power": "{{ 10 ** (10 ** 9) }}",
    "power_in_variable": "{% set x = 10 %}{{ x ** (x ** 9) }}",
    "repeated_squaring": (
        "{% set ns = namespace(x=3) %}{% for i in range(64) %}{% set ns.x = ns.x * ns.x %}{% endfor %}"
    ),
    "string_repetition": "{{ 'a' * 10**10 }}",
    "string_repetition_reversed": "{{ 10000000000 * 'a' }}",
    "list_repetition": "{{ ([1] * 10000000000) | length }}",
    "huge_range": "{{ range(10**10) | length }}",
    "tojson_float_indent": "{{ {'a': [1, 2]} | tojson(indent=1e8) }}",
    "tojson_int_indent": "{{ {'a': [1, 2]} | tojson(indent=100000000) }}",
    "center_method": "{{ 'a'.center(10**9) }}",
    "center_filter": "{{ 'a' | center(1000000000) }}",
    "ljust": "{{ 'a'.ljust(1000000000) }}",
    "rjust": "{{ 'a'.rjust(1000000000) }}",
    "zfill": "{{ '1'.zfill(1000000000) }}",
    "brace_format_width": "{{ '{:>1000000000}'.format(1) }}",
    "nested_format_width": "{{ '{:>{}}'.format(1, 1000000000) }}",
    "percent_format_width": "{{ '%1000000000d' % 1 }}",
    "percent_star_width": "{{ '%*d' % (1000000000, 1) }}",
    "format_filter_width": "{{ '%1000000000d' | format(1) }}",
    "indent_filter": "{{ 'a\nb' | indent(1000000000) }}",
    "doubling_with_tilde": (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    ),
    "doubling_with_plus": (
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"
    ),
    "output_flood": "{% for i in range(100000) %}{{ 'a' * 1000 }}{% endfor %}",
    "join_of_big_strings": "{% set s = 'a' * 4000000 %}{{ [s, s, s, s] | join }}",
    "join_method": "{% set s = 'a' * 4000000 %}{{ ''.join([s, s]) }}",
    "replace_method": "{{ ('a' * 1000000).replace('', 'bbbbbbbbbbbb') }}",
    "replace_filter": "{{ ('a' * 1000000) | replace('', 'bbbbbbbbbbbb') }}",
    "macro_buffer": (
        "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}{% endmacro %}"
        "{% set y = m() %}ok"
    ),
    "print_list_of_big_strings": "{% set s = 'a' * 3000000 %}{{ [s] * 1000 }}",
    "filter_stringifies_list": "{% set s = 'a' * 3000000 %}{{ ([s] * 1000) | upper }}",
    "string_filter": "{% set s = 'a' * 3000000 %}{{ ([s] * 1000) | string | length }}",
    "tojson_of_big_list": "{% set s = 'a' * 3000000 %}{{ ([s] * 1000) | tojson | length }}",
    "tilde_with_list": "{% set s = 'a' * 3000000 %}{{ (([s] * 1000) ~ '') | length }}",
    "brace_format_repeats_a_value": "{% set s = 'a' * 3000000 %}{{ '{0}{0}{0}{0}'.format(s) | length }}",
    "brace_format_map": "{% set s = 'a' * 3000000 %}{{ '{a}{a}{a}'.format_map({'a': s}) | length }}",
    "percent_format_tuple": "{% set s = 'a' * 3000000 %}{{ ('%s%s' % (s, s)) | length }}",
    "percent_format_mapping": "{% set s = 'a' * 3000000 %}{{ ('%(a)s%(a)s' % {'a': s}) | length }}",
    "lipsum": "{{ lipsum(n=100000) | length }}",
    "sum_of_lists": "{{ ([[1] * 4000000] * 4000000) | sum(start=[]) | length }}",
    "join_attribute": "{% set s = 'a' * 3000000 %}{{ ([{'a': s}] * 1000) | join(attribute='a') | length }}",
    "translate": "{{ ('a' * 4000000).translate({97: 'bbbb'}) | length }}",
    "list_append_growth": (
        "{% set l = [] %}{% for i in range(100000) %}{% set _ = l.extend(range(100000)) %}{% endfor %}"
    ),
}


@pytest.mark.parametrize("source", BOMBS.values(), ids=BOMBS.keys())
def test_bomb_raises_template_error(source: str) -> None:
    with pytest.raises(TemplateError):
        render(source, [], limits=FAST)


def test_output_cap_is_configurable() -> None:
    source = "{{ 'a' * 100 }}"
    assert render(source, []) == "a" * 100
    with pytest.raises(TemplateError, match="size cap"):
        render(source, [], limits=RenderLimits(max_output_chars=50))


def test_escapes_are_blocked() -> None:
    with pytest.raises(TemplateError):
        render("{{ messages.__class__.__mro__ }}", [])
    with pytest.raises(TemplateError):
        render("{{ ''.__class__.__subclasses__() }}", [])
    with pytest.raises(TemplateError):
        render("{{ messages.clear() }}", [{"role": "user", "content": "x"}])


def test_caller_data_is_never_mutated() -> None:
    messages = [{"role": "user", "content": "x"}]
    render("{% set _ = messages.pop(0) %}{{ messages | length }}", messages)
    assert messages == [{"role": "user", "content": "x"}]


def test_compile_is_cached_per_text() -> None:
    source = "{{ messages | length }} cached"
    assert compile_template(source) is compile_template(source)


def test_syntax_error_is_template_error() -> None:
    with pytest.raises(TemplateError, match="does not compile"):
        render("{% if %}", [])


def test_deeply_nested_template_is_template_error() -> None:
    with pytest.raises(TemplateError, match="does not compile"):
        render("{% if true %}" * 3000 + "{% endif %}" * 3000, [])


def test_big_but_legal_values_still_render() -> None:
    source = "{% set s = 'a' * 1000000 %}{{ '{}{}'.format(s, s) | length }} {{ ([s, s] | join) | length }}"
    assert render(source, []) == "2000000 2000000"


@pytest.mark.parametrize("name", sorted(RESERVED_VARIABLES))
def test_reserved_variables_cannot_be_overridden(name: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        render("{{ messages }}", [], template_kwargs={name: "x"})
    assert info.value.param == f"chat_template_kwargs.{name}"


def test_raise_exception_is_a_400_template_error() -> None:
    with pytest.raises(TemplateError, match="no system") as info:
        render("{{ raise_exception('no system') }}", [])
    assert info.value.status == 400


HELPERS = [
    ("{{ {'b': 1, 'a': 'é'} | tojson }}", '{"b": 1, "a": "é"}'),
    ("{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}", '{"a": 2, "b": 1}'),
    ("{{ {'a': 'é'} | tojson(ensure_ascii=True) }}", '{"a": "\\u00e9"}'),
    ("{{ {'a': [1]} | tojson(separators=(',', ':')) }}", '{"a":[1]}'),
    ("{{ {'a': 1} | tojson(indent=2) }}", '{\n  "a": 1\n}'),
    ("{{ '<b>' | tojson }}", '"<b>"'),
    ("{% generation %}kept {{ 1 + 1 }}{% endgeneration %}", "kept 2"),
    ("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}", "012"),
    ("{% for i in range(4) %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}", "02"),
    ("{{ ' ab c '.strip().upper().split(' ') }}", "['AB', 'C']"),
    ("{{ 'xxhixx'.lstrip('x').rstrip('x').title() }}", "Hi"),
    ("{{ 'a-b'.replace('-', '+') }}{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}", "a+bTrueTrue"),
    ("{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}{{ {'x': 2}.get('y', 3) }}", "a=13"),
    ("{% set ids = [] %}{% set _ = ids.append(7) %}{{ ids.pop(0) }}{{ ids | length }}", "70"),
    ("{{ '%s-%d' % ('a', 2) }}{{ '{}!'.format('b') }}", "a-2b!"),
    ("{{ 2 ** 10 }} {{ 7 // 2 }} {{ 'ab' * 2 }}", "1024 3 abab"),
    (
        "{{ [1, 2] | sum }} {{ [[1], [2]] | sum(start=[]) }} {{ [{'a': 'x'}, {'a': 'y'}] | join(',', 'a') }}",
        "3 [1, 2] x,y",
    ),
    ("{{ strftime_now('%Y') | length }}", "4"),
    ("{%- if true %}\n  a\n{%- endif %}", "  a"),
]


@pytest.mark.parametrize(("source", "expected"), HELPERS)
def test_helpers_behave_like_transformers(source: str, expected: str) -> None:
    assert render(source, []) == expected


def test_trim_and_lstrip_blocks() -> None:
    source = "{% for m in messages %}\n    {% if true %}\n{{ m.content }}\n    {% endif %}\n{% endfor %}"
    assert render(source, [{"role": "user", "content": "x"}]) == "x\n"


def test_tools_none_falls_back_to_undefined_only_when_the_template_needs_it() -> None:
    guarded = "{% if tools is not none %}tools{% else %}none{% endif %}"
    assert render(guarded, []) == "none"
    unguarded = "[{% for t in tools %}{{ t }}{% endfor %}]{{ tools is defined }}"
    assert render(unguarded, []) == "[]False"


def test_legacy_functions_variable() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert '"name": "f"' in render("{{ functions }}", [], tools=tools)
    assert render("[{{ functions }}]", []) == "[]"
