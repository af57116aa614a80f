"""Bounded replies in the ordinary case: compressed replies still decode, the limits come
from the constructor or the pin, unknown encodings and oversized SSE lines are refused."""

from __future__ import annotations

import json
import zlib

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import StreamInterrupted, UpstreamUnavailable
from nisse_llm.transport._limits import ACCEPT_ENCODING, BoundedDecoder, ReplyTooLarge
from nisse_llm.transport.routers import RoleRouter
from tests.reliability._rawserver import Conn, RawServer, chunk, head, whole
from tests.transport.harness import EVENTS, MODEL, MODES, Mode, close, complete, make_client
from tests.transport.loopback import RESPONSES, SleepLog
from tests.transport.stream_harness import read_stream

PLAIN = {"openai_chat": "oai_text_plain.json", "anthropic_messages": "ant_text_plain.json"}
JSON = ("Content-Type", "application/json")


def _encoded(body: bytes, encoding: str) -> bytes:
    for name in [e.strip() for e in encoding.split(",")]:
        if name == "gzip":
            c = zlib.compressobj(6, zlib.DEFLATED, 31)
        elif name == "deflate":
            c = zlib.compressobj(6, zlib.DEFLATED, 15)
        elif name == "raw-deflate":
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
        else:
            continue
        body = c.compress(body) + c.flush()
    return body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate", "gzip, gzip", "identity"])
async def test_a_compressed_reply_decodes_as_before(
    encoding: str, route: Route, mode: Mode
) -> None:
    """gzip, zlib and raw deflate, and a chain of two, decode to the same reply; the
    request advertised only what the reader decodes."""
    body = (RESPONSES / PLAIN[route]).read_bytes()
    header = "deflate" if encoding == "raw-deflate" else encoding
    with RawServer(whole(200, _encoded(body, encoding), JSON, ("Content-Encoding", header))) as raw:
        client = make_client(route, mode, raw.base_url, sleep=SleepLog())
        try:
            events = await complete(client, EVENTS, None, MODEL[route])
        finally:
            await close(client)
        assert Conn(None, raw.requests[0], raw.stop).header("accept-encoding") == ACCEPT_ENCODING  # type: ignore[arg-type]
    assert events


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("encoding", ["br", "zstd", "compress"])
async def test_an_encoding_not_offered_is_upstream_unavailable(encoding: str, mode: Mode) -> None:
    """A reply in an encoding the client never offered is the proxy's fault: UpstreamUnavailable."""
    with RawServer(whole(200, b"\x00" * 64, JSON, ("Content-Encoding", encoding))) as raw:
        client = make_client("openai_chat", mode, raw.base_url, sleep=SleepLog())
        try:
            with pytest.raises(UpstreamUnavailable, match="Content-Encoding"):
                await complete(client, EVENTS, None, MODEL["openai_chat"])
        finally:
            await close(client)


def test_the_decoder_stops_at_the_limit_in_pieces() -> None:
    """A 1 GiB bomb through the decoder: pieces of at most 64 KiB, ReplyTooLarge past the
    limit; an error body is cut there quietly instead."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join([c.compress(bytes(1 << 20)) for _ in range(64)] + [c.flush()])
    decoder = BoundedDecoder("gzip", 1 << 20)
    sizes: list[int] = []
    with pytest.raises(ReplyTooLarge):
        sizes.extend(len(piece) for piece in decoder.feed(bomb))
    assert max(sizes) <= 64 * 1024
    assert sum(sizes) <= 1 << 20
    cut = BoundedDecoder("gzip", 1000, truncate=True)
    assert sum(len(p) for p in cut.feed(bomb)) == 1000
    assert cut.ended


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", ["one line", "one event of many lines"])
async def test_an_sse_line_or_event_past_16_mib_interrupts_the_stream(
    shape: str, mode: Mode
) -> None:
    """17 MiB in one data line, or in one event's data lines, under the 64 MiB reply cap:
    StreamInterrupted naming the limit."""

    def script(conn: Conn) -> None:
        conn.send(head(200, ("Content-Type", "text/event-stream")))
        if shape == "one line":
            conn.send(chunk(b"data: "))
            piece = chunk(b"x" * 65536)
        else:
            piece = chunk(b"data: " + b"x" * 65530 + b"\n")
        for _ in range(17 * 16 + 1):
            if not conn.send(piece):
                return

    with RawServer(script) as raw:
        client = make_client("openai_chat", mode, raw.base_url, sleep=SleepLog())
        try:
            with pytest.raises(StreamInterrupted, match="passed 16777216 bytes"):
                await read_stream(client)
        finally:
            await close(client)


def test_a_router_takes_its_limits_from_the_pin(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NISSE_MAX_RESPONSE_BYTES and the deadlines reach every client a router builds."""
    monkeypatch.setenv("NISSE_LLM_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-limits-000000")
    for role, model in {
        "executor": "claude-x",
        "planner": "gpt-x",
        "delegate": "d",
        "consultant": "c",
    }.items():
        monkeypatch.setenv(f"NISSE_ROLE_{role.upper()}", model)
    monkeypatch.setenv("NISSE_MAX_RESPONSE_BYTES", "2048")
    monkeypatch.setenv("NISSE_CALL_DEADLINE_S", "7")
    monkeypatch.setenv("NISSE_STREAM_DEADLINE_S", "9")
    pin = load_settings().pin()
    with RoleRouter.from_pin(pin) as router:
        for role in ("executor", "planner"):
            limits = router.client_for(role)._http._transport._limits  # type: ignore[attr-defined]
            assert (
                limits.max_response_bytes,
                limits.call_deadline_s,
                limits.stream_deadline_s,
            ) == (
                2048,
                7.0,
                9.0,
            )
    assert json.loads(json.dumps(pin.record()))["max_response_bytes"] == 2048
