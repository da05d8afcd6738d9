"""Prometheus metrics of one server: requests, tokens, queue, slots, latency histograms (also the
pipeline's `Observer` of token latency and counts)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tokenloom.events import Usage


class Metrics:
    """One registry per app, so tests can run several servers in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("tokenloom_requests", "HTTP API requests", ["endpoint", "status"], registry=r)
        self.prompt_tokens = Counter("tokenloom_prompt_tokens", "Prompt tokens received", registry=r)
        self.generated_tokens = Counter("tokenloom_generated_tokens", "Tokens generated", registry=r)
        self.cached_tokens = Counter("tokenloom_cached_tokens", "Prompt tokens reused from KV", registry=r)
        self.queue_depth = Gauge("tokenloom_queue_depth", "Requests waiting for a slot", registry=r)
        self.busy_slots = Gauge("tokenloom_busy_slots", "Slots running a request", registry=r)
        self.paused_slots = Gauge(
            "tokenloom_paused_slots", "Slots waiting for a slow client to read (backpressure)", registry=r
        )
        self.ttft = Histogram(
            "tokenloom_time_to_first_token_seconds",
            "Time from request to first generated text",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.token_latency = Histogram(
            "tokenloom_time_per_output_token_seconds",
            "Time between generated tokens",
            buckets=(0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28),
            registry=r,
        )

    def first_token(self, seconds: float) -> None:
        self.ttft.observe(seconds)

    def next_token(self, seconds: float) -> None:
        self.token_latency.observe(seconds)

    def finished(self, usage: Usage) -> None:
        self.prompt_tokens.inc(usage.prompt_tokens)
        self.generated_tokens.inc(usage.completion_tokens)
        self.cached_tokens.inc(usage.cached_tokens)

    def bind_engine_gauges(
        self, queued: Callable[[], float], busy: Callable[[], float], paused: Callable[[], float] = lambda: 0
    ) -> None:
        self.queue_depth.set_function(queued)
        self.busy_slots.set_function(busy)
        self.paused_slots.set_function(paused)

    def render(self) -> bytes:
        return generate_latest(self.registry)
