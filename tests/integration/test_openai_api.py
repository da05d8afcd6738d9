"""The official openai client against the real server: chat (streamed and not), completions, models."""

from __future__ import annotations

import openai
import pytest

from tests.integration.conftest import TIMEOUT, _serve

pytestmark = pytest.mark.integration

MESSAGES = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Name three colors."},
]


def test_models_lists_the_default_model(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list().data]
    assert ids == ["gemma-3-270m-q4_k_m"]


@pytest.mark.parametrize("stream", [False, True], ids=["non-streamed", "streamed"])
def test_chat_completion(client: openai.OpenAI, stream: bool) -> None:
    if stream:
        chunks = list(
            client.chat.completions.create(
                model="gemma-3-270m-q4_k_m",
                messages=MESSAGES,
                max_tokens=12,
                temperature=0,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        usage = chunks[-1].usage
        assert chunks[0].choices[0].delta.role == "assistant"
    else:
        response = client.chat.completions.create(
            model="gemma-3-270m-q4_k_m", messages=MESSAGES, max_tokens=12, temperature=0
        )
        text = response.choices[0].message.content or ""
        finishes = [response.choices[0].finish_reason]
        usage = response.usage
    assert text.strip()
    assert finishes == ["length"]
    assert usage is not None and usage.completion_tokens == 12 and usage.prompt_tokens > 10


def test_stream_reassembles_to_the_non_streamed_message(client: openai.OpenAI) -> None:
    whole = client.chat.completions.create(model="", messages=MESSAGES, max_tokens=16, temperature=0)
    parts = client.chat.completions.create(
        model="", messages=MESSAGES, max_tokens=16, temperature=0, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in parts) == whole.choices[0].message.content


def test_completions(client: openai.OpenAI) -> None:
    response = client.completions.create(
        model="gemma-3-270m-q4_k_m", prompt="The capital of France is", max_tokens=6, temperature=0
    )
    assert response.choices[0].text
    assert response.usage is not None and response.usage.completion_tokens <= 6
    streamed = client.completions.create(
        model="gemma-3-270m-q4_k_m",
        prompt="The capital of France is",
        max_tokens=6,
        temperature=0,
        stream=True,
    )
    assert "".join(c.choices[0].text for c in streamed) == response.choices[0].text


def test_content_as_parts_and_tool_history(client: openai.OpenAI) -> None:
    response = client.chat.completions.create(
        model="",
        max_tokens=4,
        temperature=0,
        messages=[
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
    )
    assert response.choices[0].finish_reason in ("stop", "length")


def test_any_model_name_is_served_by_the_loaded_model(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].finish_reason in ("stop", "length")


def test_strict_model_names_and_aliases(tmp_path_factory: pytest.TempPathFactory) -> None:
    flags = ("--strict-model-name", "--alias", "house-model", "--alias", "gpt-4o-mini", "--parallel", "1")
    for server in _serve(tmp_path_factory, "strict-names", *flags):
        strict = openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)
        assert [m.id for m in strict.models.list().data] == ["house-model", "gpt-4o-mini"]
        reply = strict.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=2)
        assert reply.model == "house-model"
        with pytest.raises(openai.NotFoundError) as info:
            strict.chat.completions.create(model="no-such-model", messages=MESSAGES, max_tokens=2)
        assert info.value.body["param"] == "model"  # type: ignore[index]
