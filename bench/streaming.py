"""Client CPU per streamed reply: nisse_llm ``stream()`` against httpx and the official SDKs.

The approach of tests/transport/measure_stream_cpu.py, on the bench stub (its own process):
per route, contenders read the same SSE reply of ``deltas`` text deltas to its end:

- httpx ``iter_bytes``: the bytes and nothing else (no client can do less);
- httpx ``iter_lines`` + ``json.loads`` of each data line: the least a client that reads
  each event can do, and the floor the streaming target is set against;
- nisse_llm ``stream()``: every delta, then the final events and usage;
- the official SDK's streaming (``openai`` ``chat.completions.create(stream=True)`` and
  ``responses.create(stream=True)``, ``anthropic`` ``messages.stream``), iterated event
  by event, when installed.

Interleaved round by round (the order reversed every other round); medians of
``time.process_time`` per reply. ``python -m bench.streaming [--deltas N] [--rounds N]
[--runs N] [--no-sdk]`` measures only this, printing each route's ratio to the json floor per run
and the median over the runs.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROUTES = (
    ("chat", "/chat/completions"),
    ("messages", "/v1/messages"),
    ("responses", "/v1/responses"),
)
SDK_LABELS = {
    "chat": "openai SDK chat.completions.create(stream=True)",
    "messages": "anthropic SDK messages.stream",
    "responses": "openai SDK responses.create(stream=True)",
}
#: The nisse_llm client class that streams each route.
CLIENTS = {
    "chat": "LiteLLMClient",
    "messages": "AnthropicPassthroughClient",
    "responses": "OpenAIResponsesClient",
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
    if route == "responses":
        try:
            import openai
        except ImportError:
            return None, "openai is not installed"
        rsp = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-bench", max_retries=0)

        def run_responses() -> None:
            for event in rsp.responses.create(
                model="m", input="Write at length.", max_output_tokens=MAX_TOKENS, stream=True
            ):
                _ = event.type

        return run_responses, None
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


def _route(
    client: Any, http: Any, url: str, base: str, *, rounds: int, warmup: int, sdk: bool = True
) -> StreamRow:
    from nisse_llm.events.canonical import UserText

    events = [UserText(text="Write at length.")]
    sent = client._core.begin(client.call_params(events, None, "m"), stream=True).body
    seen = [0]
    route = next(name for name, path in ROUTES if url.endswith(path))

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
    run_sdk, skipped = _sdk(route, base) if sdk else (None, "not asked for")
    if run_sdk is not None:
        order.append(("sdk", run_sdk))
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


def measure(
    base_url: str, *, deltas: int, rounds: int, warmup: int, sdk: bool = True
) -> list[StreamRow]:
    """Per route, median client CPU per reply of ``deltas`` text deltas, for each contender."""
    import httpx

    from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
    from nisse_llm.transport.responses_client import OpenAIResponsesClient

    classes = {
        "chat": LiteLLMClient,
        "messages": AnthropicPassthroughClient,
        "responses": OpenAIResponsesClient,
    }
    base = f"{base_url}/sse/{deltas}"
    rows = []
    for route, path in ROUTES:
        cls = classes[route]
        with (
            cls(base, "sk-bench") as client,
            httpx.Client(headers=client._core.headers, trust_env=False) as http,
        ):
            row = _route(client, http, base + path, base, rounds=rounds, warmup=warmup, sdk=sdk)
        if row.deltas != deltas:
            raise AssertionError(f"{route}: {row.deltas} deltas streamed, expected {deltas}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure the streaming rows only, ``--runs`` times; print the ratios and their medians."""
    import argparse

    from bench import harness, procs

    parser = argparse.ArgumentParser(prog="python -m bench.streaming", description=__doc__)
    parser.add_argument("--deltas", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-sdk", action="store_true", help="leave out the official SDKs' rows")
    args = parser.parse_args(argv)
    stub_cpu, pinning = procs.pin_self()
    print(pinning)
    ratios: dict[str, list[float]] = {route: [] for route, _ in ROUTES}
    with harness.stub_server(cpu=stub_cpu) as base_url:
        for run in range(args.runs):
            rows = measure(
                base_url,
                deltas=args.deltas,
                rounds=args.rounds,
                warmup=args.warmup,
                sdk=not args.no_sdk,
            )
            for row in rows:
                assert row.json_floor
                ratio = row.nisse / row.json_floor
                ratios[row.route].append(ratio)
                sdk = "" if row.sdk is None else f"  sdk {row.sdk / row.json_floor:5.2f}x"
                print(
                    f"run {run + 1} {row.route:<9} json floor {row.json_floor * 1e6:8.0f} us  "
                    f"nisse {row.nisse * 1e6:8.0f} us  {ratio:5.2f}x{sdk}",
                    flush=True,
                )
    for route, values in ratios.items():
        shown = " ".join(f"{v:.2f}" for v in values)
        print(f"median {route:<9} {statistics.median(values):.2f}x the json floor ({shown})")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
