"""`ScriptedTransport`: sync and async httpx clients answered in process, on both routes."""

from __future__ import annotations

import httpx
import pytest

from nisse_llm.testing import (
    Disconnect,
    Script,
    ScriptedTransport,
    ToolUse,
    anthropic_failure,
    reply,
    slow,
)

MESSAGES = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}


def test_sync_client_gets_scripted_answers_on_both_routes() -> None:
    """A sync httpx client posting to either route gets that route's turn."""
    transport = ScriptedTransport()
    transport.script.chat(reply("from chat")).messages(reply(ToolUse("ls", {"dir": "."})))
    with httpx.Client(base_url="http://proxy.test", transport=transport) as http:
        chat = http.post("/chat/completions", json=CHAT)
        messages = http.post("/v1/messages", json=MESSAGES, headers={"x-api-key": "tok"})
    assert chat.status_code == 200
    assert chat.json()["choices"][0]["message"]["content"] == "from chat"
    assert messages.json()["content"][0]["name"] == "ls"
    recorded = transport.script.requests
    assert [r.route for r in recorded] == ["openai_chat", "anthropic_messages"]
    assert recorded[1].headers["x-api-key"] == "tok"
    assert recorded[1].json == MESSAGES


async def test_async_client_gets_scripted_answers_on_both_routes() -> None:
    """An async httpx client is answered from the same script."""
    script = Script().messages(reply("async hello")).chat(reply("async chat"))
    async with httpx.AsyncClient(
        base_url="http://proxy.test/v1", transport=ScriptedTransport(script)
    ) as http:
        messages = await http.post("/messages", json=MESSAGES)
        chat = await http.post("/chat/completions", json=CHAT)
    assert messages.json()["content"] == [{"type": "text", "text": "async hello"}]
    assert chat.json()["choices"][0]["message"]["content"] == "async chat"
    assert [r.path for r in script.requests] == ["/v1/messages", "/v1/chat/completions"]


def test_error_turns_arrive_as_http_errors() -> None:
    """An error turn is an HTTP response with its status, headers and body."""
    script = Script().messages(
        anthropic_failure(529, "overloaded_error", "Overloaded", headers={"retry-after": "3"})
    )
    with httpx.Client(transport=ScriptedTransport(script)) as http:
        response = http.post("http://proxy.test/v1/messages", json=MESSAGES)
    assert response.status_code == 529
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["type"] == "overloaded_error"


def test_delay_within_the_timeout_sleeps_then_answers() -> None:
    """A delayed turn calls the transport's sleep with the delay, then answers."""
    slept: list[float] = []
    transport = ScriptedTransport(Script().chat(slow(reply("late"), 1.5)), sleep=slept.append)
    with httpx.Client(transport=transport, timeout=5.0) as http:
        response = http.post("http://proxy.test/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert slept == [1.5]


def test_delay_beyond_the_read_timeout_raises_read_timeout() -> None:
    """A turn slower than the client's read timeout times out after that timeout, as a socket would."""
    slept: list[float] = []
    transport = ScriptedTransport(Script().chat(slow(reply("late"), 30)), sleep=slept.append)
    with httpx.Client(transport=transport, timeout=2.0) as http, pytest.raises(httpx.ReadTimeout):
        http.post("http://proxy.test/chat/completions", json=CHAT)
    assert slept == [2.0]


async def test_disconnect_raises_a_protocol_error() -> None:
    """A `Disconnect` turn is a connection dropped without an answer."""
    transport = ScriptedTransport(Script().messages(Disconnect()))
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="disconnected"):
            await http.post("http://proxy.test/v1/messages", json=MESSAGES)
