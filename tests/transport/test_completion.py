"""``completion()`` on clients and routers: the call's own events, usage and call info, which
concurrent callers never read from one another (unlike ``last_usage`` / ``last_call``)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import Completion, UserText
from nisse_llm.testing import (
    AsyncScriptedClient,
    AsyncScriptedRouter,
    Script,
    ScriptedClient,
    ScriptedRouter,
    ScriptedTransport,
    Tokens,
    reply,
    slow,
)
from nisse_llm.testing.turns import Reply
from tests.transport.harness import MODEL, MODES, ROUTES, Mode, close, make_client
from tests.transport.loopback import SleepLog

CASES = [(route, mode) for route in ROUTES for mode in MODES]
CASE_IDS = [f"{route}-{mode}" for route, mode in CASES]
LOG = [UserText(text="hi")]


def _with_call_id(turn: Reply, call_id: str) -> Reply:
    return dataclasses.replace(turn, headers=(("x-litellm-call-id", call_id),))


def _client(route: Route, mode: Mode, script: Script) -> Any:
    return make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(), transport=ScriptedTransport(script)
    )


async def _completion(client: Any, *args: Any) -> Completion:
    result = client.completion(*args)
    return result if isinstance(result, Completion) else await result


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_clients_completion_holds_that_calls_usage_and_call(
    route: Route, mode: Mode
) -> None:
    first = _with_call_id(reply("one", usage=Tokens(input=11, output=3)), "call-one")
    second = _with_call_id(reply("two", usage=Tokens(input=22, output=5)), "call-two")
    client = _client(route, mode, Script().add(route, first, second))
    try:
        one = await _completion(client, LOG, None, MODEL[route])
        two = await _completion(client, LOG, None, MODEL[route])
    finally:
        await close(client)
    assert [e.text for e in one.events] == ["one"]
    assert (one.usage.input, one.usage.output) == (11, 3)
    assert (two.usage.input, two.usage.output) == (22, 5)
    assert one.call is not None
    assert one.call.call_id == "call-one"
    assert two.call is not None
    assert two.call.call_id == "call-two"
    assert client.last_usage == two.usage
    assert client.last_call == two.call


@pytest.mark.parametrize("route", ROUTES)
async def test_two_concurrent_async_calls_each_get_their_own_figures(route: Route) -> None:
    # The first call's answer comes last: `last_usage` ends up the first's, yet each
    # completion holds its own.
    slow_turn = _with_call_id(slow(reply("slow", usage=Tokens(input=100, output=7)), 0.2), "c-slow")
    fast_turn = _with_call_id(reply("fast", usage=Tokens(input=200, output=9)), "c-fast")
    client = _client(route, "async", Script().add(route, slow_turn, fast_turn))
    try:
        first = asyncio.create_task(client.completion(LOG, None, MODEL[route]))
        await asyncio.sleep(0.05)  # the slow turn is taken by the first call
        fast = await client.completion(LOG, None, MODEL[route])
        slowed = await first
    finally:
        await client.aclose()
    assert (slowed.usage.input, slowed.usage.output, slowed.call.call_id) == (100, 7, "c-slow")
    assert (fast.usage.input, fast.usage.output, fast.call.call_id) == (200, 9, "c-fast")
    assert [e.text for e in slowed.events] == ["slow"]
    assert [e.text for e in fast.events] == ["fast"]
    assert client.last_usage == slowed.usage


def test_complete_returns_the_completions_events() -> None:
    client = ScriptedClient(
        [reply("a", usage=Tokens(input=1, output=2)), reply("a", usage=Tokens(input=1, output=2))]
    )
    completion = client.completion(LOG, None, "m")
    assert client.complete(LOG, None, "m") == completion.events
    assert (completion.usage.input, completion.usage.output) == (1, 2)


async def test_an_async_scripted_clients_completions_are_their_own() -> None:
    client = AsyncScriptedClient(
        [reply("x", usage=Tokens(input=3, output=4)), reply("y", usage=Tokens(input=5, output=6))]
    )
    x, y = await asyncio.gather(
        client.completion(LOG, None, "m"), client.completion(LOG, None, "m")
    )
    assert {(c.events[0].text, c.usage.input) for c in (x, y)} == {("x", 3), ("y", 5)}


def test_a_routers_completion_holds_that_calls_usage() -> None:
    router = ScriptedRouter(
        {
            "planner": [reply("plan", usage=Tokens(input=30, output=4))],
            "executor": [reply("done", usage=Tokens(input=40, output=6))],
        }
    )
    with router:
        plan = router.completion("planner", LOG, None)
        done = router.completion("executor", LOG, None)
    assert [e.text for e in plan.events] == ["plan"]
    assert (plan.usage.input, plan.usage.output) == (30, 4)
    assert (done.usage.input, done.usage.output) == (40, 6)
    assert router.last_usage == done.usage


async def test_two_concurrent_async_router_calls_each_get_their_own_figures() -> None:
    router = AsyncScriptedRouter(
        {
            "planner": [slow(reply("plan", usage=Tokens(input=30, output=4)), 0.2)],
            "executor": [reply("done", usage=Tokens(input=40, output=6))],
        }
    )
    async with router:
        plan, done = await asyncio.gather(
            router.completion("planner", LOG, None), router.completion("executor", LOG, None)
        )
    assert (plan.usage.input, plan.usage.output) == (30, 4)
    assert (done.usage.input, done.usage.output) == (40, 6)
    assert router.last_usage == plan.usage
