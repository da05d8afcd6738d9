"""Built-in templates for models whose GGUF carries none (the default Gemma 3 270M among them)."""

from __future__ import annotations

# Gemma's turn format: the system text opens the first user turn, assistant turns are "model" turns.
GEMMA_TURNS = """{{ bos_token }}
{%- set ns = namespace(system='') -%}
{%- for message in messages -%}
{%- if message['role'] in ['system', 'developer'] -%}
{%- set ns.system = ns.system + (message['content'] if message['content'] is string else '') + '\\n\\n' -%}
{%- else -%}
{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}
<start_of_turn>{{ role }}
{{ ns.system }}{%- set ns.system = '' -%}
{%- if message['content'] is string -%}{{ message['content'] | trim }}
{%- elif message['content'] is iterable -%}
{%- for part in message['content'] -%}
{%- if part['type'] == 'text' -%}{{ part['text'] | trim }}{%- endif -%}
{%- endfor -%}
{%- endif -%}
<end_of_turn>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
"""
