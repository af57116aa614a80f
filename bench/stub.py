"""A loopback stub provider: reads each request whole and answers one fixed completion.

Runs in its own process (``python -m bench.stub``), so its CPU never counts as client
CPU; it prints ``PORT <n>`` once listening. HTTP/1.1 keep-alive, Content-Length or
chunked bodies. ``GET /_last`` describes the last body received (parsed only then), so a
contender's request can be checked once without taxing every timed call.
Under ``/sse/<n>`` (a base URL prefix) a streamed request gets a text reply of ``n``
deltas as SSE, in 4 KiB chunked writes (built once per ``n`` and route).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

TEXT = "The failing assertion comes from the cache key; I'll run the focused test first."
TOOL = "run_tests"
ARGUMENTS = {"selector": "tests/test_cache.py::test_key_is_stable", "verbose": True}

CHAT_BODY: dict[str, Any] = {
    "id": "chatcmpl-bench0001",
    "object": "chat.completion",
    "created": 1764460800,
    "model": "bench-model",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": TEXT,
                "tool_calls": [
                    {
                        "id": "call_bench0001",
                        "type": "function",
                        "function": {"name": TOOL, "arguments": json.dumps(ARGUMENTS)},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 65412, "completion_tokens": 58, "total_tokens": 65470},
}

MESSAGES_BODY: dict[str, Any] = {
    "id": "msg_bench0001",
    "type": "message",
    "role": "assistant",
    "model": "claude-bench",
    "content": [
        {"type": "text", "text": TEXT},
        {"type": "tool_use", "id": "toolu_bench0001", "name": TOOL, "input": ARGUMENTS},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 65412,
        "output_tokens": 58,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    },
}

RESPONSES_BODY: dict[str, Any] = {
    "id": "resp_bench0001",
    "object": "response",
    "created_at": 1764460800,
    "status": "completed",
    "model": "bench-model",
    "output": [
        {
            "id": "msg_bench0001",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
        },
        {
            "id": "fc_bench0001",
            "type": "function_call",
            "status": "completed",
            "call_id": "call_bench0001",
            "name": TOOL,
            "arguments": json.dumps(ARGUMENTS),
        },
    ],
    "usage": {
        "input_tokens": 65412,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 58,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 65470,
    },
}


def _response(status: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


_CHAT = _response("200 OK", json.dumps(CHAT_BODY).encode())
_MESSAGES = _response("200 OK", json.dumps(MESSAGES_BODY).encode())
_RESPONSES = _response("200 OK", json.dumps(RESPONSES_BODY).encode())
_NOT_FOUND = _response("404 Not Found", b'{"error": {"message": "no such route"}}')
ROUTES = {
    "/chat/completions": _CHAT,
    "/v1/chat/completions": _CHAT,
    "/v1/messages": _MESSAGES,
    "/v1/responses": _RESPONSES,
}
# Streamed only (the non-streaming rows use the other two routes).
STREAM_ONLY = ("/v1/responses",)


DELTA_CHARS = 8
_STREAMS: dict[tuple[str, int], bytes] = {}


def stream_body(path: str, deltas: int) -> dict[str, Any]:
    """A text-only reply on ``path``'s route whose text streams as ``deltas`` deltas."""
    text = "".join(f"w{i % 10}rd-{i:03d}"[:DELTA_CHARS] for i in range(deltas))
    if path.endswith("/v1/responses"):
        from nisse_llm.testing import Text, Tokens, openai_responses_body

        usage = Tokens(input=65412, output=58)
        return openai_responses_body([Text(text)], model="bench-model", usage=usage)
    if path.endswith("/v1/messages"):
        body: dict[str, Any] = json.loads(json.dumps(MESSAGES_BODY))
        body["content"] = [{"type": "text", "text": text}]
        body["stop_reason"] = "end_turn"
        return body
    body = json.loads(json.dumps(CHAT_BODY))
    body["choices"][0]["message"] = {"role": "assistant", "content": text}
    body["choices"][0]["finish_reason"] = "stop"
    return body


def _stream_response(path: str, deltas: int) -> bytes:
    key = (path, deltas)
    if key not in _STREAMS:
        # Imported here: the plain stub stays light, and only streaming rows need it.
        from nisse_llm.testing.sse import split_bytes, sse_stream

        route = (
            "anthropic_messages"
            if path.endswith("/v1/messages")
            else "openai_responses"
            if path.endswith("/v1/responses")
            else "openai_chat"
        )
        data = sse_stream(
            route,
            stream_body(path, deltas),
            chunk_size=DELTA_CHARS,
        )
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in split_bytes(data, 4096)]
        _STREAMS[key] = head + b"".join(chunks) + b"0\r\n\r\n"
    return _STREAMS[key]


def _answer(path: str) -> bytes:
    if path.startswith("/sse/"):
        _, _, n, rest = path.split("/", 3)
        if f"/{rest}" in ROUTES or f"/{rest}" in STREAM_ONLY:
            return _stream_response(f"/{rest}", int(n))
    return ROUTES.get(path, _NOT_FOUND)


class _Last:
    path = ""
    body = b""


def _describe_last() -> bytes:
    info: dict[str, Any] = {"path": _Last.path, "bytes": len(_Last.body)}
    try:
        data = json.loads(_Last.body)
    except ValueError:
        info["json"] = False
    else:
        info["json"] = True
        info["keys"] = sorted(data)
        info["messages"] = len(data.get("messages") or data.get("input") or ())
        info["tools"] = len(data.get("tools") or ())
    return _response("200 OK", json.dumps(info).encode())


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                body = await _read_chunked(reader)
            else:
                body = b""
            path = target.split("?", 1)[0]
            if method == "GET" and path == "/_last":
                writer.write(_describe_last())
            else:
                _Last.path, _Last.body = path, body
                writer.write(_answer(path))
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
