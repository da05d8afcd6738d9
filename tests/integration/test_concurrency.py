"""Continuous batching: a request's output does not depend on what runs beside it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

pytestmark = pytest.mark.integration

PROMPTS = ["Write a short poem about the sea.", "List three colors.", "What is 2+2?", "Name a fruit."]


def _ask(client: openai.OpenAI, prompt: str, **sampling: object) -> str:
    response = client.chat.completions.create(
        model="", messages=[{"role": "user", "content": prompt}], max_tokens=24, **sampling
    )
    return response.choices[0].message.content or ""


@pytest.mark.parametrize(
    "sampling", [{"temperature": 0}, {"temperature": 0.9, "seed": 1234}], ids=["greedy", "seeded"]
)
def test_output_is_the_same_alone_and_beside_three_others(client: openai.OpenAI, sampling: dict) -> None:
    alone = _ask(client, PROMPTS[0], **sampling)
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda p: _ask(client, p, **sampling), PROMPTS))
    assert together[0] == alone
    assert len(set(together)) > 1  # the neighbours really generated something else


def test_seed_changes_the_output(client: openai.OpenAI) -> None:
    outputs = {_ask(client, PROMPTS[0], temperature=1.0, seed=s) for s in (1, 2, 3)}
    assert len(outputs) > 1
