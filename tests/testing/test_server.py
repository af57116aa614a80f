"""`ScriptedServer`: a real loopback HTTP server answering from a script on both routes."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from nisse_llm.testing import (
    Disconnect,
    Script,
    ScriptedServer,
    ScriptedTransport,
    Thinking,
    cut_after,
    ended_after,
    openai_failure,
    reply,
    slow,
    truncated,
)

MESSAGES = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}


def test_server_answers_both_routes_and_records_requests() -> None:
    """Chat completions (with and without /v1) and messages are answered and recorded."""
    script = Script().chat(reply("a"), reply("b")).messages(reply(Thinking("hm", "sig"), "c"))
    with ScriptedServer(script) as server, httpx.Client(base_url=server.base_url) as http:
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        first = http.post("/chat/completions", json=CHAT)
        second = http.post("/v1/chat/completions", json=CHAT)
        third = http.post(
            "/v1/messages", json=MESSAGES, headers={"anthropic-version": "2023-06-01"}
        )
    assert [first.status_code, second.status_code, third.status_code] == [200, 200, 200]
    assert first.json()["choices"][0]["message"]["content"] == "a"
    assert second.json()["choices"][0]["message"]["content"] == "b"
    assert third.json()["content"][0] == {"type": "thinking", "thinking": "hm", "signature": "sig"}
    assert [r.path for r in script.requests] == [
        "/chat/completions",
        "/v1/chat/completions",
        "/v1/messages",
    ]
    assert script.requests[2].headers["anthropic-version"] == "2023-06-01"
    assert script.requests[2].json == MESSAGES


def test_server_sends_error_turns_and_truncation() -> None:
    """Errors keep status, body and headers over the wire; truncation keeps its stop reason."""
    script = Script().chat(
        openai_failure(
            503, "down for maintenance", type="server_error", headers={"retry-after": "9"}
        )
    )
    script.messages(truncated("cut"))
    with ScriptedServer(script) as server, httpx.Client(base_url=server.base_url) as http:
        failed = http.post("/chat/completions", json=CHAT)
        cut = http.post("/v1/messages", json=MESSAGES)
    assert failed.status_code == 503
    assert failed.headers["retry-after"] == "9"
    assert failed.json()["error"]["message"] == "down for maintenance"
    assert cut.json()["stop_reason"] == "max_tokens"


def test_server_answers_an_unscripted_request_with_500() -> None:
    """With no turn queued the server answers 500 rather than hanging."""
    with ScriptedServer() as server:
        response = httpx.post(f"{server.base_url}/v1/messages", json=MESSAGES)
        assert response.status_code == 500
        assert len(server.script.unscripted) == 1


def test_server_delays_and_disconnects() -> None:
    """A slow turn is answered late; a disconnect turn closes the connection unanswered."""
    script = Script().chat(slow(reply("late"), 0.3), Disconnect())
    with ScriptedServer(script) as server, httpx.Client(base_url=server.base_url) as http:
        started = time.monotonic()
        assert http.post("/chat/completions", json=CHAT).status_code == 200
        assert time.monotonic() - started >= 0.3
        with pytest.raises(httpx.RemoteProtocolError):
            http.post("/chat/completions", json=CHAT)


def test_a_client_timeout_does_not_break_the_server() -> None:
    """A client that gives up on a slow turn leaves the server answering the next request."""
    script = Script().chat(slow(reply("late"), 1.0), reply("next"))
    with ScriptedServer(script) as server, httpx.Client(base_url=server.base_url) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post("/chat/completions", json=CHAT, timeout=0.2)
        response = http.post("/chat/completions", json=CHAT)
    assert response.json()["choices"][0]["message"]["content"] == "next"


def test_stop_releases_the_port_and_interrupts_delays() -> None:
    """After `stop` nothing listens on the port, even with a long delay in flight."""
    server = ScriptedServer(Script().chat(slow(reply("never"), 60))).start()
    port = server.port
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.base_url}/chat/completions", json=CHAT, timeout=0.2)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 5
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.port


def test_a_clean_cut_ends_the_body_without_an_error_and_a_broken_one_raises() -> None:
    """`ended_after` closes a body with no length at an event boundary; `cut_after` breaks it."""
    text = "word " * 400
    stream = {**CHAT, "stream": True}
    script = Script().chat(ended_after(reply(text), 2_000), cut_after(reply(text), 2_000))
    with ScriptedServer(script) as server, httpx.Client(base_url=server.base_url) as http:
        ended = http.post("/chat/completions", json=stream)
        assert "content-length" not in ended.headers
        assert ended.content.endswith(b"\n\n")
        assert len(ended.content) <= 2_000
        assert b"[DONE]" not in ended.content
        with pytest.raises(httpx.RemoteProtocolError):
            http.post("/chat/completions", json=stream)
    in_process = Script().chat(ended_after(reply(text), 2_000))
    with httpx.Client(transport=ScriptedTransport(in_process)) as http:
        same = http.post("http://upstream.test/chat/completions", json=stream)
    assert same.content.endswith(b"\n\n")
    assert len(same.content) <= 2_000
