"""One call against one hostile raw loopback server, in its own process, measured.

Run as ``python -m tests.reliability._hostile CASE KIND MODE``: KIND is ``complete`` or
``stream``, MODE ``sync`` or ``async``. Prints one JSON object: the outcome (``ok`` or
the `LLMError` class raised; anything else escapes and fails the process), the time the
call took, memory (RSS before the call and the peak during it: Linux ``VmHWM``, reset
through ``/proc/self/clear_refs`` just before the call), how many requests and
connections the server saw, and how many calls were metered (``on_usage``).

The client runs with small bounds so each probe ends fast: replies of at most
`MAX_BYTES`, deadlines of `DEADLINE_S`, a read timeout of `READ_S`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import Usage
from nisse_llm.testing.sse import sse_stream
from tests.reliability._rawserver import (
    HOSTILE,
    Conn,
    RawServer,
    Script,
    chunk,
    compress,
    endless,
    head,
    whole,
)
from tests.transport.harness import EVENTS, MODEL, TOKEN
from tests.transport.loopback import RESPONSES
from tests.transport.stream_harness import read_stream

MB = 1024 * 1024
MAX_BYTES = 4 * MB
DEADLINE_S = 2.0
READ_S = 1.0
DRIP_S = 0.3
JSON = ("Content-Type", "application/json")
SSE = ("Content-Type", "text/event-stream")
PLAIN = {"openai_chat": "oai_text_plain.json", "anthropic_messages": "ant_text_plain.json"}
EMPTY_DELTA = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":""}}]}\n\n'
)
PING = b'event: ping\ndata: {"type": "ping"}\n\n'
KEEPALIVE = b": keepalive\n\n"
ERROR_HEAD = b'{"error": {"message": "bad request", "type": "invalid_request_error", "x": "'


def _stream_head(route: Route) -> bytes:
    """The first events of a valid stream (up to its first text), as one chunk."""
    data = sse_stream(route, json.loads((RESPONSES / PLAIN[route]).read_text()))
    return data[: data.index(b"\n\n", len(data) // 3) + 2]


def _stream_whole(route: Route) -> bytes:
    return sse_stream(route, json.loads((RESPONSES / PLAIN[route]).read_text()))


def _drip(route: Route, piece: bytes, *, prefix: bytes = b"") -> Script:
    """A 200 stream that starts well, then sends ``piece`` every `DRIP_S` forever."""

    def script(conn: Conn) -> None:
        if not conn.send(head(200, SSE) + (chunk(prefix) if prefix else b"")):
            return
        while conn.sleep(DRIP_S) and conn.send(chunk(piece)):
            pass

    return script


def _drip_bytes(conn: Conn) -> None:
    """A 200 JSON body one byte at a time, every `DRIP_S`, forever."""
    if not conn.send(head(200, JSON) + chunk(b'{"id": "')):
        return
    while conn.sleep(DRIP_S) and conn.send(chunk(b"x")):
        pass


def _drip_headers(conn: Conn) -> None:
    """A status line, then one header line every `DRIP_S`, never ending the headers."""
    if not conn.send(b"HTTP/1.1 200 OK\r\n"):
        return
    while conn.sleep(DRIP_S) and conn.send(b"X-Wait: 1\r\n"):
        pass


def _endless_error(conn: Conn) -> None:
    conn.send(head(400, JSON) + chunk(ERROR_HEAD))
    piece = chunk(b"x" * 65536)
    while conn.send(piece):
        pass


def _trailing(route: Route) -> Script:
    """A whole valid stream, then keepalives every 0.1 s forever."""

    def script(conn: Conn) -> None:
        if not conn.send(head(200, SSE) + chunk(_stream_whole(route))):
            return
        while conn.sleep(0.1) and conn.send(chunk(KEEPALIVE)):
            pass

    return script


def _case(name: str) -> tuple[Route, Script]:
    if name == "gzip_bomb":
        body = compress(64 * MB, 31)
        return "openai_chat", whole(200, body, JSON, ("Content-Encoding", "gzip"))
    if name == "deflate_bomb":
        body = compress(64 * MB, 15)
        return "anthropic_messages", whole(200, body, JSON, ("Content-Encoding", "deflate"))
    if name == "gzip_gzip_bomb":
        body = (HOSTILE / "gzip_gzip_2gib.bin").read_bytes()
        return "openai_chat", whole(200, body, JSON, ("Content-Encoding", "gzip, gzip"))
    if name == "error_gzip_gzip_bomb":
        body = (HOSTILE / "gzip_gzip_2gib.bin").read_bytes()
        return "anthropic_messages", whole(400, body, JSON, ("Content-Encoding", "gzip, gzip"))
    if name == "endless_200":
        return "openai_chat", endless(200, b"x" * 65536, JSON)
    if name == "endless_400":
        return "anthropic_messages", _endless_error
    if name == "endless_keepalives":
        return "openai_chat", endless(200, KEEPALIVE * 4096, SSE)
    if name == "endless_pings":
        return "anthropic_messages", endless(200, PING * 1024, SSE)
    if name == "endless_empty_deltas":
        return "openai_chat", endless(200, EMPTY_DELTA * 256, SSE)
    if name == "drip_headers":
        return "anthropic_messages", _drip_headers
    if name == "drip_bytes":
        return "openai_chat", _drip_bytes
    if name == "drip_keepalives":
        return "openai_chat", _drip("openai_chat", KEEPALIVE, prefix=_stream_head("openai_chat"))
    if name == "drip_pings":
        route: Route = "anthropic_messages"
        return route, _drip(route, PING, prefix=_stream_head(route))
    if name == "drip_empty_deltas":
        return "openai_chat", _drip("openai_chat", EMPTY_DELTA, prefix=_stream_head("openai_chat"))
    if name == "trailing_keepalives_chat":
        return "openai_chat", _trailing("openai_chat")
    if name == "trailing_keepalives_messages":
        return "anthropic_messages", _trailing("anthropic_messages")
    raise SystemExit(f"unknown case {name!r}")


def _client(route: Route, mode: str, base_url: str, metered: list[Usage]) -> Any:
    from nisse_llm.transport import clients

    kinds = {
        ("openai_chat", "sync"): clients.LiteLLMClient,
        ("openai_chat", "async"): clients.AsyncLiteLLMClient,
        ("anthropic_messages", "sync"): clients.AnthropicPassthroughClient,
        ("anthropic_messages", "async"): clients.AsyncAnthropicPassthroughClient,
    }
    return kinds[route, mode](
        base_url,
        TOKEN,
        timeout_s=READ_S,
        stream_idle_timeout_s=READ_S,
        rate_limit_retries=0,
        max_response_bytes=MAX_BYTES,
        call_deadline_s=DEADLINE_S,
        stream_deadline_s=DEADLINE_S,
        on_usage=lambda usage, model: metered.append(usage),
    )


async def _run(client: Any, route: Route, kind: str) -> object:
    if kind == "stream":
        return await read_stream(client)
    result = client.complete(EVENTS, None, MODEL[route])
    return await result if inspect.isawaitable(result) else result


async def _close(client: Any) -> None:
    if hasattr(client, "aclose"):
        await client.aclose()
    else:
        client.close()


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main(name: str, kind: str, mode: str) -> None:
    route, script = _case(name)
    metered: list[Usage] = []
    with RawServer(script) as server:
        client = _client(route, mode, server.base_url, metered)
        Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts from here
        before = _status_mb("VmRSS")
        start = time.perf_counter()
        try:
            asyncio.run(_run(client, route, kind))
            outcome, message = "ok", ""
        except LLMError as exc:
            outcome, message = type(exc).__name__, str(exc)[:400]
        seconds = time.perf_counter() - start
        peak = _status_mb("VmHWM")
        asyncio.run(_close(client))
        tokens = {Conn(None, r, server.stop).token for r in server.requests}  # type: ignore[arg-type]
        report = {
            "case": name,
            "kind": kind,
            "mode": mode,
            "outcome": outcome,
            "message": message,
            "seconds": round(seconds, 3),
            "rss_before_mb": round(before, 1),
            "growth_mb": round(peak - before, 1),
            "requests": len(server.requests),
            "connections": server.connections,
            "tokens_sent": sorted(tokens),
            "metered": len(metered),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
