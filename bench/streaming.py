"""Client CPU per streamed reply: nisse_llm ``stream()`` against httpx and the official SDKs.

The approach of tests/clients/measure_stream_cpu.py, on the bench stub (its own process):
per route, contenders read the same SSE reply of ``deltas`` text deltas to its end:

- httpx ``iter_bytes``: the bytes and nothing else (no client can do less);
- httpx ``iter_lines`` + ``json.loads`` of each data line: the least a client that reads
  each event can do, and the floor the streaming target is set against;
- nisse_llm ``stream()``: every delta, then the final events and usage;
- the official SDK's streaming (``openai`` ``chat.completions.create(stream=True)``,
  ``anthropic`` ``messages.stream``), iterated event by event, when installed.

Interleaved round by round (the order reversed every other round); medians of
``time.process_time`` per reply.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROUTES = (("chat", "/chat/completions"), ("messages", "/v1/messages"))
SDK_LABELS = {
    "chat": "openai SDK chat.completions.create(stream=True)",
    "messages": "anthropic SDK messages.stream",
}


@dataclass
class StreamRow:
    """One route's medians (seconds of client CPU per reply) and the deltas seen per reply."""

    route: str
    deltas: int
    floor: float  # httpx iter_bytes
    nisse: float
    json_floor: float | None = None  # httpx iter_lines + json.loads per event
    sdk: float | None = None
    sdk_skipped: str | None = None
    extra: dict[str, float] = field(default_factory=dict)


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _sdk(route: str, base: str) -> tuple[Callable[[], object] | None, str | None]:
    """The official SDK's streaming read of the reply, or why it cannot run here."""
    from bench.workload import MAX_TOKENS

    prompt = [{"role": "user", "content": "Write at length."}]
    if route == "chat":
        try:
            import openai
        except ImportError:
            return None, "openai is not installed"
        oai = openai.OpenAI(base_url=base, api_key="sk-bench", max_retries=0)

        def run_openai() -> None:
            for chunk in oai.chat.completions.create(
                model="m", messages=prompt, max_tokens=MAX_TOKENS, stream=True
            ):
                for choice in chunk.choices:
                    _ = choice.delta.content

        return run_openai, None
    try:
        import anthropic
    except ImportError:
        return None, "anthropic is not installed"
    ant = anthropic.Anthropic(base_url=base, api_key="sk-bench", max_retries=0)

    def run_anthropic() -> None:
        with ant.messages.stream(model="m", messages=prompt, max_tokens=MAX_TOKENS) as stream:
            for _ in stream:
                pass
            stream.get_final_message()

    return run_anthropic, None


def _route(client: Any, http: Any, url: str, base: str, *, rounds: int, warmup: int) -> StreamRow:
    from nisse_llm.log.canonical import UserText

    events = [UserText(text="Write at length.")]
    sent = client._core.begin(events, None, "m", None, stream=True).body
    seen = [0]
    route = "chat" if url.endswith("/chat/completions") else "messages"

    def floor() -> None:
        with http.stream("POST", url, content=sent) as response:
            for _ in response.iter_bytes():
                pass

    def json_floor() -> None:
        loads = json.loads
        with http.stream("POST", url, content=sent) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    loads(line[6:])

    def nisse() -> None:
        with client.stream(events, None, "m") as stream:
            seen[0] = sum(1 for _ in stream)
        if not stream.events:
            raise AssertionError("nisse_llm streamed no events")

    order: list[tuple[str, Callable[[], object]]] = [
        ("floor", floor),
        ("json", json_floor),
        ("nisse", nisse),
    ]
    sdk, skipped = _sdk(route, base)
    if sdk is not None:
        order.append(("sdk", sdk))
    samples: dict[str, list[float]] = {name: [] for name, _ in order}
    for r in range(warmup + rounds):
        gc.collect()
        for name, fn in order if r % 2 else order[::-1]:
            cpu = _cpu(fn)
            if r >= warmup:
                samples[name].append(cpu)
    med = {name: statistics.median(values) for name, values in samples.items()}
    return StreamRow(
        route,
        seen[0],
        med["floor"],
        med["nisse"],
        json_floor=med["json"],
        sdk=med.get("sdk"),
        sdk_skipped=skipped,
    )


def measure(base_url: str, *, deltas: int, rounds: int, warmup: int) -> list[StreamRow]:
    """Per route, median client CPU per reply of ``deltas`` text deltas, for each contender."""
    import httpx

    from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient

    base = f"{base_url}/sse/{deltas}"
    rows = []
    for route, path in ROUTES:
        cls = LiteLLMClient if route == "chat" else AnthropicPassthroughClient
        with (
            cls(base, "sk-bench") as client,
            httpx.Client(headers=client._core.headers, trust_env=False) as http,
        ):
            row = _route(client, http, base + path, base, rounds=rounds, warmup=warmup)
        if row.deltas != deltas:
            raise AssertionError(f"{route}: {row.deltas} deltas streamed, expected {deltas}")
        rows.append(row)
    return rows
