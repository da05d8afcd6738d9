"""What a chat template can express, found by rendering probe conversations with marker strings.

Detection never looks at model names: a capability is present when its marker survives the render.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tokenloom.chat.bounds import BudgetExceeded, RenderLimits, bounded
from tokenloom.chat.jinja_env import compile_template
from tokenloom.chat.template import render
from tokenloom.errors import TemplateError

_SYSTEM = "tlm_system_marker"
_LATE_SYSTEM = "tlm_late_system_marker"
_USER = "tlm_user_marker"
_USER2 = "tlm_second_user_marker"
_TOOL = "tlm_tool_marker"
_TOOL2 = "tlm_other_tool_marker"
_PARAM = "tlm_param_marker"  # in tool schemas; calls use _ARG, so argument checks see only calls
_ARG = "tlm_arg_marker"
_VALUE = "tlm_value_marker"  # calls are detected by argument values: tool names also appear in tool lists
_VALUE2 = "tlm_other_value_marker"
_CALL_ID = "tlmcallid"  # 9 alphanumerics: Mistral templates refuse other ids
_LONG_CALL_ID = "call_tlm_long_id_marker"
_RESULT = "tlm_result_marker"
_REASONING = "tlm_reasoning_marker"
_ANSWER = "tlm_answer_marker"
_PROBE_LIMITS = RenderLimits(timeout_s=1.0, max_output_chars=1024 * 1024)
_DETECT_LIMITS = RenderLimits(timeout_s=3.0)  # all probes together; real templates need milliseconds
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_THINKING_VARIABLES = ("enable_thinking", "thinking", "reasoning")


@dataclass(frozen=True, slots=True)
class TemplateCaps:
    """Capabilities of one template; each flag is what the probe render showed."""

    supports_user_turn: bool = False  # renders [{"role": "user", ...}]; if not, the template is broken
    supports_system_role: bool = False
    supports_late_system: bool = False  # a system message after the first turns renders
    supports_tools: bool = False
    requires_flat_tools: bool = False  # tools as {"name", "description", "parameters"}, no "function" wrapper
    supports_tool_calls: bool = False
    supports_tool_responses: bool = False
    supports_parallel_tool_calls: bool = False
    supports_tool_call_id: bool = False
    supports_object_arguments: bool = False  # tool-call arguments rendered from a dict
    supports_string_arguments: bool = False  # arguments as a JSON string render as JSON
    supports_typed_content: bool = False  # content as [{"type": "text", "text": ...}]
    supports_null_content: bool = False  # assistant content None (with tool calls) renders cleanly
    supports_reasoning: bool = False
    supports_enable_thinking: bool = False
    requires_fixed_call_ids: bool = False  # only ids of 9 alphanumerics, e.g. "a1B2c3D4e", render
    requires_alternation: bool = False  # two user turns in a row make the template raise
    reasoning_field: str | None = None  # e.g. "reasoning_content", "thinking"
    thinking_variable: str | None = None  # e.g. "enable_thinking", "thinking"

    @property
    def requires_object_arguments(self) -> bool:
        """Arguments must be passed as objects (the HF convention): strings render wrong or fail."""
        return self.supports_object_arguments and not self.supports_string_arguments


def flatten_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI tools without their {"type": "function", "function": ...} wrapper."""
    return [tool.get("function", tool) if tool.get("type") == "function" else tool for tool in tools]


def _probe(template: str, messages: list[dict[str, Any]], **options: Any) -> str:
    """The faithful render, or "" when the template refuses the conversation (but not when it is slow)."""
    options.setdefault("add_generation_prompt", False)
    try:
        return render(template, messages, limits=_PROBE_LIMITS, **options)
    except BudgetExceeded:
        raise
    except TemplateError:
        return ""


def _tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {_PARAM: {"type": "string"}}, "required": [_PARAM]}
    return {"type": "function", "function": {"name": name, "description": "probe", "parameters": parameters}}


def _call(name: str, arguments: Any, call_id: str = _CALL_ID) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _calls_turn(calls: list[dict[str, Any]], content: str | None = "") -> list[dict[str, Any]]:
    assistant = {"role": "assistant", "content": content, "tool_calls": calls}
    return [{"role": "user", "content": _USER}, assistant]


def _shows_arguments(out: str) -> bool:
    """The argument key appears as JSON/XML text, not escaped inside a JSON string."""
    return _ARG in out and _VALUE in out and f'\\"{_ARG}' not in out and f"'{_ARG}'" not in out


def _renders_parts(out: str, marker: str) -> bool:
    """Text parts render as their text, not as a Python repr of the list."""
    return marker in out and "'text'" not in out


@lru_cache(maxsize=128)
def detect_caps(template: str) -> TemplateCaps:
    """Probe `template` with small conversations; cached per template text.

    A template too slow to probe raises TemplateError (and is not cached as capable of nothing).
    """
    try:
        with bounded(_DETECT_LIMITS):
            return _detect(template)
    except BudgetExceeded as exc:
        raise TemplateError(f"chat template is too slow to probe its capabilities: {exc}") from exc


def _detect(template: str) -> TemplateCaps:
    variables = compile_template(template).variables
    user = [{"role": "user", "content": _USER}]
    tools = [_tool(_TOOL), _tool(_TOOL2)]
    system_out = _probe(template, [{"role": "system", "content": _SYSTEM}, *user])
    typed_user = {"role": "user", "content": [{"type": "text", "text": _USER}]}
    typed_system = {"role": "system", "content": [{"type": "text", "text": _SYSTEM}]}
    typed_out = _probe(template, [typed_user])
    typed_system_out = _probe(template, [typed_system, typed_user]) if _SYSTEM in system_out else _SYSTEM
    tools_out = _probe(template, user, tools=tools, add_generation_prompt=True)
    flat_out = "" if _TOOL in tools_out else _probe(template, user, tools=flatten_tools(tools))
    obj_out = _probe(template, _calls_turn([_call(_TOOL, {_ARG: _VALUE})]), tools=tools)
    str_out = _probe(template, _calls_turn([_call(_TOOL, f'{{"{_ARG}": "{_VALUE}"}}')]), tools=tools)
    two_calls = [_call(_TOOL, {_ARG: _VALUE}), _call(_TOOL2, {_ARG: _VALUE2}, "tlmcallib")]
    parallel_out = _probe(template, _calls_turn(two_calls), tools=tools)
    response = {"role": "tool", "tool_call_id": _CALL_ID, "name": _TOOL, "content": _RESULT}
    response_out = _probe(template, [*_calls_turn([_call(_TOOL, {_ARG: _VALUE})]), response], tools=tools)
    null_turn = _calls_turn([_call(_TOOL, {_ARG: _VALUE})], None)
    null_out = _probe(template, [*null_turn, response], tools=tools)
    long_turn = _calls_turn([_call(_TOOL, {_ARG: _VALUE}, _LONG_CALL_ID)])
    long_out = _probe(template, [*long_turn, {**response, "tool_call_id": _LONG_CALL_ID}], tools=tools)
    short_turn = _calls_turn([_call(_TOOL, {_ARG: _VALUE}, "c1")])
    short_out = _probe(template, [*short_turn, {**response, "tool_call_id": "c1"}], tools=tools)
    any_id_ok = _RESULT in long_out and _RESULT in short_out
    late = [
        {"role": "system", "content": _SYSTEM},
        *user,
        {"role": "assistant", "content": _ANSWER},
        {"role": "system", "content": _LATE_SYSTEM},
        {"role": "user", "content": _USER2},
    ]
    late_out = _probe(template, late)
    twice = _probe(template, [*user, {"role": "user", "content": _USER2}])
    user_out = _probe(template, user)
    return TemplateCaps(
        supports_user_turn=_USER in user_out,
        supports_system_role=_SYSTEM in system_out,
        supports_late_system=_SYSTEM in late_out and _LATE_SYSTEM in late_out,
        supports_tools=_TOOL in tools_out or _TOOL in flat_out,
        requires_flat_tools=_TOOL in flat_out,
        supports_tool_calls=_VALUE in obj_out or _VALUE in str_out,
        supports_tool_responses=_RESULT in response_out,
        supports_parallel_tool_calls=_VALUE in parallel_out and _VALUE2 in parallel_out,
        supports_tool_call_id=_CALL_ID in obj_out or _CALL_ID in response_out,
        supports_object_arguments=_shows_arguments(obj_out),
        supports_string_arguments=_shows_arguments(str_out),
        supports_typed_content=_renders_parts(typed_out, _USER) and _renders_parts(typed_system_out, _SYSTEM),
        supports_null_content=_VALUE in null_out and null_out == response_out,
        supports_reasoning=(field := _reasoning_field(template)) is not None,
        supports_enable_thinking=(thinking := _thinking_variable(template, variables)) is not None,
        requires_fixed_call_ids=_RESULT in response_out and not any_id_ok,
        requires_alternation=_USER in user_out and _USER2 not in twice,
        reasoning_field=field,
        thinking_variable=thinking,
    )


def _reasoning_field(template: str) -> str | None:
    """The assistant-message field whose text the template renders as reasoning."""
    for field in _REASONING_FIELDS:
        answer = {"role": "assistant", "content": _ANSWER, field: _REASONING}
        if _REASONING in _probe(template, [{"role": "user", "content": _USER}, answer]):
            return field
    return None


def _thinking_variable(template: str, variables: frozenset[str]) -> str | None:
    """The template variable that switches thinking on and off (it changes the prompt)."""
    user = [{"role": "user", "content": _USER}]
    for name in _THINKING_VARIABLES:
        if name not in variables:
            continue
        on = _probe(template, user, add_generation_prompt=True, template_kwargs={name: True})
        off = _probe(template, user, add_generation_prompt=True, template_kwargs={name: False})
        if on != off:
            return name
    return None
