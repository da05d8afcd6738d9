"""Session servers for integration tests: the real default model over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.integration.server_process import ServerProcess

TIMEOUT = httpx.Timeout(120.0, connect=10.0)


def _serve(
    tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str, deterministic: bool = True
) -> Iterator[ServerProcess]:
    """A test server; deterministic (batch-independent logits) unless a test is about the fast mode."""
    log = tmp_path_factory.mktemp("logs") / f"{name}.log"
    mode = ("--deterministic",) if deterministic else ()
    server = ServerProcess(*mode, *flags, log_path=log).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The main server: 4 slots, a queue of 2, 2048 tokens per slot."""
    yield from _serve(tmp_path_factory, "main", "--parallel", "4", "--queue-size", "2", "--ctx-size", "2048")


@pytest.fixture(scope="session")
def client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)


@pytest.fixture(scope="session")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as c:
        yield c
