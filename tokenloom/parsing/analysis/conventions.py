"""Tool-call conventions of templates that describe tools but never render a call (LFM2's and LFM2.5
Instruct's only print the tool list): the model still writes calls in its family's convention.

A convention is recognised by the text its tool list writes into the prompt, and described by a small
reference template of our own that renders calls that way; phase 2 analyses the reference instead. Knows
nothing of parsing; only renders through the probes.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenloom.parsing.analysis.probes import PROBE_TOOLS, Prober


@dataclass(frozen=True, slots=True)
class Convention:
    """A tool-call convention: `tool_list` is what its prompts write before the tools (e.g. "List of
    tools: "), `reference` a template that renders its calls."""

    name: str
    tool_list: str
    reference: str


# Liquid AI's LFM2 family: "<|tool_call_start|>[name(key="value", n=1)]<|tool_call_end|>" (Python call
# syntax), the form LFM2.5-8B-A1B's own template renders; its siblings list tools the same way.
_PYTHONIC_LIST = Convention(
    name="pythonic call list (LFM2 family)",
    tool_list="List of tools: ",
    reference="""{%- macro value(v) -%}
{%- if v is string -%}{{ '"' + v + '"' }}
{%- elif v is mapping -%}{{ v | tojson }}
{%- else -%}{{ v | string }}{%- endif -%}
{%- endmacro -%}
{%- if tools -%}<|im_start|>system
List of tools: [{{ tools | map(attribute='function') | map('tojson') | join(', ') }}]<|im_end|>
{% endif -%}
{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.tool_calls -%}
<|tool_call_start|>[
{%- for c in m.tool_calls -%}{{ c.function.name }}(
{%- for k, v in c.function.arguments.items() -%}
{{ k }}={{ value(v) }}{{ ', ' if not loop.last }}
{%- endfor -%}
){{ ', ' if not loop.last }}{%- endfor -%}
]<|tool_call_end|>
{%- endif -%}
{{ m.content or '' }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}""",
)

CONVENTIONS = (_PYTHONIC_LIST,)


def convention_of(template: str) -> Convention | None:
    """The convention whose tool list this template writes into its prompt, if any."""
    prompt = Prober(template, PROBE_TOOLS).prompt(True)
    if not prompt:
        return None
    for convention in CONVENTIONS:
        if convention.tool_list in prompt:
            return convention
    return None
