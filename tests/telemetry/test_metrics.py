"""The conventions' client metrics: names, units, bucket boundaries, attributes and values."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from nisse_llm import UserText
from nisse_llm.testing import Script, ScriptedTransport, Tokens, reply
from tests.telemetry.conftest import Telemetry
from tests.telemetry.helpers import CALLERS, PROVIDERS, Caller, caller_id

# The boundaries the GenAI conventions (gen-ai-metrics.md) give, copied here as the judge.
SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]

DURATION = "gen_ai.client.operation.duration"
USAGE = "gen_ai.client.token.usage"
FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
PER_CHUNK = "gen_ai.client.operation.time_per_output_chunk"


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_call_records_duration_and_token_usage(otel: Telemetry, caller: Caller) -> None:
    """One call: one duration point in seconds and an input and an output token point,
    with the conventions' buckets and attributes; no chunk timings for a whole reply."""
    script = Script().add(caller.route, reply("ok", usage=Tokens(900, 30)))
    await caller.complete(script, [UserText(text="hi")])

    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDERS[caller.route],
        "gen_ai.request.model": caller.model,
        "gen_ai.response.model": caller.model,
        "server.address": "proxy.test",
        "server.port": 4000,
    }
    (duration,) = otel.points(DURATION)
    assert dict(duration.attributes or {}) == common
    assert list(duration.explicit_bounds) == SECONDS
    assert duration.count == 1
    assert 0 < duration.sum < 5
    usage = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points(USAGE)}
    assert set(usage) == {"input", "output"}
    assert usage["input"].sum == 900
    assert usage["output"].sum == 30
    for point in usage.values():
        assert list(point.explicit_bounds) == TOKENS
        assert {
            k: v for k, v in (point.attributes or {}).items() if k != "gen_ai.token.type"
        } == common
    assert otel.metric_units() == {DURATION: "s", USAGE: "{token}"}
    assert otel.points(FIRST_CHUNK) == []
    assert otel.points(PER_CHUNK) == []


class _Events(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body handed over one server-sent event per read."""

    def __init__(self, body: bytes) -> None:
        self.pieces = [event + b"\n\n" for event in body.split(b"\n\n") if event.strip()]

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


class _EventByEvent(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """The scripted transport, its streamed replies delivered an event at a time."""

    def __init__(self, script: Script) -> None:
        self.inner = ScriptedTransport(script)
        self.reads = 0

    def _split(self, response: httpx.Response) -> httpx.Response:
        events = _Events(response.read())
        self.reads = len(events.pieces)
        return httpx.Response(response.status_code, headers=response.headers, stream=events)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._split(self.inner.handle_request(request))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        await response.aread()
        return self._split(response)


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_stream_records_time_to_first_chunk_and_per_output_chunk(
    otel: Telemetry, caller: Caller
) -> None:
    """A stream read event by event: one time-to-first-chunk point and one per later read
    that carried output, with the conventions' buckets."""
    script = Script().add(caller.route, reply("one two three four five six", usage=Tokens(50, 6)))
    transport = _EventByEvent(script)
    await caller.stream(script, [UserText(text="hi")], transport=transport)

    (first,) = otel.points(FIRST_CHUNK)
    assert first.count == 1
    assert list(first.explicit_bounds) == SECONDS
    assert "error.type" not in (first.attributes or {})
    (per_chunk,) = otel.points(PER_CHUNK)
    assert list(per_chunk.explicit_bounds) == SECONDS
    # Every read after the first that yielded a delta; envelope-only events yield none.
    assert 2 <= per_chunk.count < transport.reads
    assert otel.metric_units()[PER_CHUNK] == "s"
    (duration,) = otel.points(DURATION)
    assert first.sum <= duration.sum
