"""stream() against nisse_llm.testing's scripted upstream: in process and over a loopback socket."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import StreamInterrupted
from nisse_llm.events.canonical import UserText
from nisse_llm.testing import (
    Script,
    ScriptedServer,
    ScriptedTransport,
    Thinking,
    ToolUse,
    cut_after,
    reply,
    stalled_after,
)
from nisse_llm.transport.routers import AsyncRoleRouter
from tests.transport.harness import MODEL, MODES, ROUTES, Mode, close, complete, make_client
from tests.transport.loopback import SleepLog
from tests.transport.stream_harness import normalised, read_stream

CASES = [(route, mode) for route in ROUTES for mode in MODES]
CASE_IDS = [f"{route}-{mode}" for route, mode in CASES]
LONG = "A long answer, streamed in small pieces. " * 20
REPLY = reply(
    Thinking("First read the file.", "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ=="),
    "Reading it.",
    ToolUse("read_file", {"path": "calc.py"}),
    ToolUse("run_tests", {"selector": "tests/"}),
)


def _client(route: Route, mode: Mode, script: Script, **options: Any) -> Any:
    return make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(), transport=ScriptedTransport(script),
        **options,
    )  # fmt: skip


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_scripted_reply_streams_to_the_events_complete_returns(
    route: Route, mode: Mode
) -> None:
    """The in-process transport streams a scripted reply; its events equal the same reply completed."""
    script = Script().add(route, REPLY, REPLY)
    client = _client(route, mode, script)
    try:
        completed = await complete(client, [UserText(text="hi")], None, MODEL[route])
        deltas, completion = await read_stream(client)
    finally:
        await close(client)
    assert normalised(completion.events) == normalised(completed)
    assert deltas
    assert script.requests[1].json["stream"] is True


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_scripted_cut_is_stream_interrupted(route: Route, mode: Mode) -> None:
    """cut_after drops the body mid-stream: StreamInterrupted with the text so far."""
    script = Script().add(route, cut_after(reply(LONG), 1500))
    client = _client(route, mode, script)
    try:
        with pytest.raises(
            StreamInterrupted, match="connection lost: RemoteProtocolError"
        ) as caught:
            await read_stream(client)
    finally:
        await close(client)
    assert 0 < len(caught.value.partial.text) < len(LONG)
    assert LONG.startswith(caught.value.partial.text)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_scripted_stall_past_the_idle_timeout_is_stream_interrupted(
    route: Route, mode: Mode
) -> None:
    """stalled_after longer than stream_idle_timeout_s fails after the idle timeout, not the stall."""
    script = Script().add(route, stalled_after(reply(LONG), 1500, 30.0))
    client = _client(route, mode, script, stream_idle_timeout_s=0.2)
    started = time.monotonic()
    try:
        with pytest.raises(StreamInterrupted, match=r"no data for 0\.2 s"):
            await read_stream(client)
    finally:
        await close(client)
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_scripted_stall_within_the_idle_timeout_completes(route: Route, mode: Mode) -> None:
    """A pause shorter than the idle timeout is no failure: the reply completes."""
    script = Script().add(route, stalled_after(reply(LONG), 1500, 0.1))
    client = _client(route, mode, script, stream_idle_timeout_s=2.0)
    try:
        _, completion = await read_stream(client)
    finally:
        await close(client)
    assert completion.events[0].text == LONG  # type: ignore[union-attr]


@pytest.mark.parametrize("route", ROUTES)
def test_the_scripted_server_streams_and_cuts_over_a_real_socket(route: Route) -> None:
    """ScriptedServer answers a stream as text/event-stream, and a cut reaches the client as StreamInterrupted."""
    script = Script().add(route, reply(LONG), cut_after(reply(LONG), 2000))
    with ScriptedServer(script) as server:
        with httpx.Client() as http:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
            path = {
                "openai_chat": "/chat/completions",
                "anthropic_messages": "/v1/messages",
                "openai_responses": "/v1/responses",
            }[route]
            answer = http.post(server.base_url + path, json={**body, "max_tokens": 9})
        assert answer.headers["content-type"] == "text/event-stream"
        with make_client(route, "sync", server.base_url, sleep=SleepLog()) as client:
            stream = client.stream([UserText(text="hi")], None, MODEL[route])
            with pytest.raises(StreamInterrupted, match="connection lost"), stream:
                list(stream)


async def test_the_async_role_router_streams_down_the_pinned_models_route() -> None:
    """AsyncRoleRouter.stream sends to the role's pinned model on that model's route."""
    pin = load_settings(
        llm={"base_url": "http://proxy.test", "token": "sk-test"},
        roles={
            "executor": "gpt-4o-mini",
            "planner": "claude-sonnet-4-5",
            "delegate": "gpt-4o-mini",
            "consultant": "gpt-4o-mini",
        },
    ).pin()
    script = Script().messages(reply("Planned."))
    router = AsyncRoleRouter.from_pin(pin, transport=ScriptedTransport(script))
    try:
        async with router.stream("planner", [UserText(text="plan")], None) as stream:
            texts = [d async for d in stream]
    finally:
        await router.aclose()
    assert [e.text for e in stream.events] == ["Planned."]  # type: ignore[union-attr]
    assert texts
    (sent,) = script.requests
    assert (sent.route, sent.json["model"], sent.json["stream"]) == (
        "anthropic_messages",
        "claude-sonnet-4-5",
        True,
    )
