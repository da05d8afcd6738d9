"""Built-in templates for models whose GGUF carries none (the default Gemma 3 270M among them).

Tool use is written as plain JSON text inside ordinary turns, in the same shape `messages.py`
uses when it adapts a conversation for a template without tool support.
"""

from __future__ import annotations

import json

# What a model without native tool support is told; its reply is then a JSON object
# {"tool_calls": [{"name": ..., "arguments": {...}}]}, and results come back as user turns
# {"tool_response": {"tool": ..., "content": ..., "tool_call_id": ...}}.
TOOLS_PREAMBLE = (
    "You can call the following tools. To call tools, reply with only a JSON object of the form "
    '{"tool_calls": [{"name": "<tool name>", "arguments": {<arguments>}}]}.\n\nTools:\n'
)

# Gemma's turn format: system text (and the tool list) opens the first user turn, assistant turns
# are "model" turns, tool calls are JSON after the content, tool results are user turns.
_GEMMA_TURNS = """{{ bos_token }}
{%- set ns = namespace(system='', tools='') -%}
{%- if tools -%}
{%- set ns.tools = @TOOLS_PREAMBLE@ + (tools | tojson(indent=2)) + '\\n\\n' -%}
{%- endif -%}
{%- macro text(content) -%}
{%- if content is string -%}{{ content | trim }}
{%- elif content is iterable -%}
{%- for part in content if part['type'] == 'text' -%}
{{ part['text'] | trim }}{{ '\\n' if not loop.last }}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- for message in messages -%}
{%- if message['role'] in ['system', 'developer'] -%}
{%- set ns.system = ns.system + text(message['content']) + '\\n\\n' -%}
{%- else -%}
{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}
<start_of_turn>{{ role }}
{{ ns.system }}{%- set ns.system = '' -%}
{%- if role == 'user' -%}{{ ns.tools }}{%- set ns.tools = '' -%}{%- endif -%}
{%- if message['role'] == 'tool' -%}
{%- set response = {'tool': message['name'], 'content': text(message['content'])} if message['name'] is string
    else {'content': text(message['content'])} -%}
{%- if message['tool_call_id'] is string -%}
{%- set response = dict(response, tool_call_id=message['tool_call_id']) -%}
{%- endif -%}
{{ {'tool_response': response} | tojson }}
{%- else -%}
{{ text(message['content']) }}
{%- if message['tool_calls'] -%}
{{ '\\n\\n' if message['content'] }}{"tool_calls": [
{%- for call in message['tool_calls'] -%}
{%- set arguments = call['function']['arguments'] -%}
{"name": {{ call['function']['name'] | tojson }}, "arguments": {% if arguments is string -%}
{{ arguments }}{% else %}{{ arguments | tojson }}{% endif %}}
{{- ', ' if not loop.last }}
{%- endfor -%}
]}
{%- endif -%}
{%- endif -%}
<end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
"""

GEMMA_TURNS = _GEMMA_TURNS.replace("@TOOLS_PREAMBLE@", json.dumps(TOOLS_PREAMBLE))
