"""Client CPU per streamed reply: nisse_llm ``stream()`` against httpx reading the same SSE.

The approach of tests/clients/measure_stream_cpu.py, on the bench stub (its own process):
per route, the floor posts the body nisse_llm would send and reads the reply with
``iter_bytes`` to its end; nisse_llm iterates every delta of ``stream()``. Interleaved
round by round; medians of ``time.process_time`` per reply.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROUTES = (("chat", "/chat/completions"), ("messages", "/v1/messages"))


@dataclass
class StreamRow:
    """One route's medians (seconds of client CPU per reply) and the deltas seen per reply."""

    route: str
    deltas: int
    floor: float
    nisse: float


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _route(client: Any, http: Any, url: str, *, rounds: int, warmup: int) -> StreamRow:
    from nisse_llm.canonical import UserText

    events = [UserText(text="Write at length.")]
    sent = client._core.begin(events, None, "m", None, stream=True).body
    seen = [0]

    def floor() -> None:
        with http.stream("POST", url, content=sent) as response:
            for _ in response.iter_bytes():
                pass

    def nisse() -> None:
        with client.stream(events, None, "m") as stream:
            seen[0] = sum(1 for _ in stream)

    samples: dict[str, list[float]] = {"floor": [], "nisse": []}
    order = [("floor", floor), ("nisse", nisse)]
    for r in range(warmup + rounds):
        gc.collect()
        for name, fn in order if r % 2 else order[::-1]:
            cpu = _cpu(fn)
            if r >= warmup:
                samples[name].append(cpu)
    route = "chat" if url.endswith("/chat/completions") else "messages"
    return StreamRow(
        route, seen[0], statistics.median(samples["floor"]), statistics.median(samples["nisse"])
    )


def measure(base_url: str, *, deltas: int, rounds: int, warmup: int) -> list[StreamRow]:
    """Per route, median client CPU per reply of ``deltas`` text deltas: floor and nisse_llm."""
    import httpx

    from nisse_llm.clients import AnthropicPassthroughClient, LiteLLMClient

    base = f"{base_url}/sse/{deltas}"
    rows = []
    for route, path in ROUTES:
        cls = LiteLLMClient if route == "chat" else AnthropicPassthroughClient
        with (
            cls(base, "sk-bench") as client,
            httpx.Client(headers=client._core.headers, trust_env=False) as http,
        ):
            row = _route(client, http, base + path, rounds=rounds, warmup=warmup)
        if row.deltas != deltas:
            raise AssertionError(f"{route}: {row.deltas} deltas streamed, expected {deltas}")
        rows.append(row)
    return rows
