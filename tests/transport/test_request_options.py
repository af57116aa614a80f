"""Per-call request options reach the wire on every client, complete and stream alike."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nisse_llm.config.options import RequestOptions
from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import ToolSpec, UserText
from nisse_llm.testing import Script, ScriptedTransport, reply
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.transport.harness import MODEL, MODES, ROUTES, Mode, close, complete, make_client
from tests.transport.loopback import SleepLog
from tests.transport.stream_harness import read_stream

CASES = [
    (route, mode, kind) for route in ROUTES for mode in MODES for kind in ("complete", "stream")
]
IDS = ["-".join(case) for case in CASES]
#: The field each route sends the output ceiling in.
CEILING = {
    "openai_chat": "max_tokens",
    "anthropic_messages": "max_tokens",
    "openai_responses": "max_output_tokens",
}
TOOL = ToolSpec(name="submit_review", description="Submit.", parameters={"type": "object"})


async def _send(
    route: Route, mode: Mode, kind: str, options: RequestOptions | None, **client: Any
) -> dict[str, Any]:
    """One call through a client with ``client`` settings; the body the upstream got."""
    script = Script().add(route, reply("Done."))
    target = make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(),
        transport=ScriptedTransport(script), **client,
    )  # fmt: skip
    events = [UserText(text="Review this.")]
    try:
        if kind == "complete":
            await complete(target, events, [TOOL], MODEL[route], options=options)
        else:
            await read_stream(target, events, [TOOL], options=options)
    finally:
        await close(target)
    body: dict[str, Any] = script.requests[0].json
    assert body.get("stream", False) is (kind == "stream")
    return body


@pytest.mark.parametrize(("route", "mode", "kind"), CASES, ids=IDS)
async def test_call_options_win_over_the_client_default(
    route: Route, mode: Mode, kind: str
) -> None:
    """The call's ceiling beats the client's ``max_tokens``; its other options reach the body."""
    # The Responses route has no stop sequences (refused, see tests/routes/openai_responses).
    stop = () if route == "openai_responses" else ("END",)
    options = RequestOptions(
        max_output_tokens=3000, tool_choice="submit_review", parallel_tool_calls=False,
        stop=stop,
    )  # fmt: skip
    body = await _send(route, mode, kind, options, max_tokens=1234)
    assert body[CEILING[route]] == 3000
    if route == "openai_responses":
        assert body["tool_choice"] == {"type": "function", "name": "submit_review"}
        assert body["parallel_tool_calls"] is False
        assert "stop" not in body
    elif route == "openai_chat":
        assert body["tool_choice"] == {"type": "function", "function": {"name": "submit_review"}}
        assert body["parallel_tool_calls"] is False
        assert body["stop"] == ["END"]
    else:
        assert body["tool_choice"] == {
            "type": "tool", "name": "submit_review", "disable_parallel_tool_use": True,
        }  # fmt: skip
        assert body["stop_sequences"] == ["END"]


@pytest.mark.parametrize(("route", "mode", "kind"), CASES, ids=IDS)
async def test_without_options_the_client_default_holds(
    route: Route, mode: Mode, kind: str
) -> None:
    body = await _send(route, mode, kind, None, max_tokens=1234)
    assert body[CEILING[route]] == 1234
    assert "tool_choice" not in body
    assert "thinking" not in body


@pytest.mark.parametrize(("route", "mode"), [(r, m) for r in ROUTES for m in MODES])
async def test_an_invalid_combination_is_refused_before_sending(route: Route, mode: Mode) -> None:
    script = Script()
    target = make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(), transport=ScriptedTransport(script)
    )
    options = RequestOptions(tool_choice="deploy")
    try:
        with pytest.raises(RenderError, match="names no tool"):
            await complete(target, [UserText(text="hi")], [TOOL], MODEL[route], options=options)
        with pytest.raises(RenderError, match="names no tool"):
            target.stream([UserText(text="hi")], [TOOL], MODEL[route], options=options)
    finally:
        await close(target)
    assert script.requests == []


# --- routers: call > role profile > client default ---------------------------------------

ROLES = {
    "planner": {
        "model": "claude-sonnet-4-5",
        "reasoning": "low",
        "max_output_tokens": 6000,
        "stop": ["</plan>"],
    },
    "executor": {"model": "gpt-4o-mini", "temperature": 0.3, "max_output_tokens": 500},
    "delegate": "claude-opus-4-1",
    "consultant": "gpt-4o-mini",
}
ROUTER_CASES = [(mode, kind) for mode in MODES for kind in ("complete", "stream")]


async def _route(
    mode: Mode, kind: str, role: str, options: RequestOptions | None, cache: bool | None = None
) -> dict[str, Any]:
    """One call through a router over ``ROLES``; the body the upstream got."""
    pin = load_settings(
        llm={"base_url": "http://proxy.test", "token": "sk-test", "max_output_tokens": 1234},
        roles=ROLES,
    ).pin()
    script = Script().chat(reply("Done.")).messages(reply("Done."))
    transport = ScriptedTransport(script)
    events = [UserText(text="Go.")]
    if mode == "sync":
        with RoleRouter.from_pin(pin, transport=transport) as router:
            if kind == "complete":
                router.complete(role, events, [TOOL], options=options, cache=cache)
            else:
                with router.stream(role, events, [TOOL], options=options, cache=cache) as stream:
                    list(stream)
    else:
        async with AsyncRoleRouter.from_pin(pin, transport=transport) as arouter:
            if kind == "complete":
                await arouter.complete(role, events, [TOOL], options=options, cache=cache)
            else:
                async with arouter.stream(
                    role, events, [TOOL], options=options, cache=cache
                ) as astream:
                    [delta async for delta in astream]
    (request,) = script.requests
    body: dict[str, Any] = request.json
    assert body.get("stream", False) is (kind == "stream")
    return body


@pytest.mark.parametrize(("mode", "kind"), ROUTER_CASES)
async def test_router_messages_route_precedence(mode: Mode, kind: str) -> None:
    """planner (messages route): its profile applies, the call overrides field by field."""
    body = await _route(mode, kind, "planner", None)
    assert body["max_tokens"] == 6000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["stop_sequences"] == ["</plan>"]
    body = await _route(mode, kind, "planner", RequestOptions(max_output_tokens=9000, stop=("X",)))
    assert body["max_tokens"] == 9000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["stop_sequences"] == ["X"]
    body = await _route(mode, kind, "delegate", None)
    assert body["max_tokens"] == 1234
    assert "thinking" not in body


@pytest.mark.parametrize(("mode", "kind"), ROUTER_CASES)
async def test_router_chat_route_precedence(mode: Mode, kind: str) -> None:
    """executor (chat route): profile sampling and ceiling, call wins, default below both."""
    body = await _route(mode, kind, "executor", None)
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 500
    body = await _route(mode, kind, "executor", RequestOptions(temperature=0.9, top_p=0.5))
    assert body["temperature"] == 0.9
    assert body["top_p"] == 0.5
    assert body["max_tokens"] == 500
    body = await _route(mode, kind, "consultant", RequestOptions(tool_choice="required"))
    assert body["max_tokens"] == 1234
    assert body["tool_choice"] == "required"
    assert "temperature" not in body


@pytest.mark.parametrize(("mode", "kind"), ROUTER_CASES)
async def test_router_takes_a_per_call_cache_switch(mode: Mode, kind: str) -> None:
    marked = json.dumps(await _route(mode, kind, "delegate", None))
    assert "cache_control" in marked
    plain = json.dumps(await _route(mode, kind, "delegate", None, cache=False))
    assert "cache_control" not in plain


@pytest.mark.parametrize("mode", MODES)
async def test_router_refuses_a_call_that_breaks_the_profiles_model(mode: Mode) -> None:
    """A call asking the Anthropic planner for temperature is refused before sending."""
    with pytest.raises(RenderError, match="Anthropic model"):
        await _route(mode, "complete", "planner", RequestOptions(temperature=0.5))


@pytest.mark.parametrize(("route", "mode", "kind"), CASES, ids=IDS)
async def test_a_call_decides_its_rules_once(route: Route, mode: Mode, kind: str) -> None:
    """The transport decides a call's rules once and hands them to the renderer, which
    asks for no decision of its own (the route's decider counts every ask)."""
    from nisse_llm.config.option_rules import decide

    options = RequestOptions(max_output_tokens=3000, tool_choice="submit_review")
    before = decide.cache_info()
    body = await _send(route, mode, kind, options)
    after = decide.cache_info()
    assert (after.hits + after.misses) - (before.hits + before.misses) == 1
    assert body[CEILING[route]] == 3000
