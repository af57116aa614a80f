"""The hooks a router gives a client (`observe`): an async client awaits them.

The start hook is awaited before the request leaves, the end hook as the call ends and
before its outcome reaches the caller, for every ending: a reply, a failure, a stream
read whole, broken or left early, a log that cannot be rendered. While a hook waits the
event loop keeps running. A sync client calls the same hooks plainly, with the same
starts and endings in the same order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from nisse_llm.errors import LLMError, RenderError, StreamInterrupted
from nisse_llm.events.canonical import CanonicalEvent, ToolResult, Usage, UserText
from nisse_llm.testing import Script, ScriptedTransport, Tokens, cut_after, openai_failure, reply
from nisse_llm.transport.clients import AsyncLiteLLMClient, LiteLLMClient
from nisse_llm.transport.core import Call

BASE_URL = "http://proxy.test"
TOKEN = "sk-hooks-5b1e0c7d93a2"
MODEL = "gpt-4o-mini"
LOG: list[CanonicalEvent] = [UserText(text="Say hello.")]
#: A log no route can render: a tool result whose call is absent.
UNRENDERABLE: list[CanonicalEvent] = [ToolResult(call_id="nowhere", output="x")]
LONG = "A long answer, streamed in small pieces. " * 20

#: Case -> (the turn scripted, the hooks' notes: what each saw and how many requests the
#: upstream had received by then).
CASES: dict[str, tuple[Any, list[tuple[str, int]]]] = {
    "complete": (reply("hello"), [("start", 0), ("ok", 1)]),
    "completion": (reply("hello"), [("start", 0), ("ok", 1)]),
    "stream whole": (reply(LONG), [("start", 0), ("ok", 1)]),
    "stream broken": (cut_after(reply(LONG), 1500), [("start", 0), ("StreamInterrupted", 1)]),
    "stream left early": (reply(LONG), [("start", 0), ("closed", 1)]),
    "failed": (openai_failure(400, "no such thing"), [("start", 0), ("LLMError", 1)]),
    "render failure": (reply("never sent"), [("RenderError", 0)]),
    "stream render failure": (reply("never sent"), [("RenderError", 0)]),
}


async def _acall(client: AsyncLiteLLMClient, case: str) -> object:
    """Make ``case``'s call; what it returned, or the exception it raised."""
    try:
        if case == "complete":
            return await client.complete(LOG, None, MODEL)
        if case == "completion":
            return (await client.completion(LOG, None, MODEL)).events
        if case == "render failure":
            return await client.complete(UNRENDERABLE, None, MODEL)
        log = UNRENDERABLE if case == "stream render failure" else LOG
        async with client.stream(log, None, MODEL) as stream:
            if case == "stream left early":
                return [await anext(stream)]
            return [delta async for delta in stream]
    except LLMError as exc:
        return exc


def _call(client: LiteLLMClient, case: str) -> object:
    """`_acall` on a sync client."""
    try:
        if case == "complete":
            return client.complete(LOG, None, MODEL)
        if case == "completion":
            return client.completion(LOG, None, MODEL).events
        if case == "render failure":
            return client.complete(UNRENDERABLE, None, MODEL)
        log = UNRENDERABLE if case == "stream render failure" else LOG
        with client.stream(log, None, MODEL) as stream:
            if case == "stream left early":
                return [next(stream)]
            return list(stream)
    except LLMError as exc:
        return exc


@dataclass
class Ticker:
    """A coroutine counting its turns on the loop."""

    ticks: int = 0

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.ticks += 1

    async def turns(self, n: int) -> None:
        """Return once the ticker has ticked ``n`` more times (it cannot while the loop is
        blocked)."""
        until = self.ticks + n
        while self.ticks < until:
            await asyncio.sleep(0.001)


@dataclass
class Held:
    """Async hooks that stop at every start and end until the test lets them go."""

    arrivals: asyncio.Queue[tuple[str, asyncio.Event]] = field(default_factory=asyncio.Queue)
    outcomes: list[tuple[str, Usage | None]] = field(default_factory=list)

    async def start(self, call: Call) -> None:
        await self._hold("start")

    async def end(self, call: Call, usage: Usage | None, outcome: str) -> None:
        self.outcomes.append((outcome, usage))
        await self._hold(outcome)

    async def _hold(self, what: str) -> None:
        gate = asyncio.Event()
        await self.arrivals.put((what, gate))
        await gate.wait()


async def _held_through(
    run: Callable[[], Awaitable[object]], hooks: Held, script: Script
) -> tuple[object, list[tuple[str, int]]]:
    """Run the call as a task; at each hook it waits in, let the loop turn while it is
    held, note what the upstream has received meanwhile and check the caller has no
    outcome yet, then let it go. What the call returned or raised, and the notes."""
    ticker = Ticker()
    ticking = asyncio.create_task(ticker.run())
    caller = asyncio.create_task(run())
    notes: list[tuple[str, int]] = []
    try:
        while True:
            arrived = asyncio.create_task(hooks.arrivals.get())
            await asyncio.wait({arrived, caller}, timeout=60, return_when="FIRST_COMPLETED")
            if not arrived.done():
                arrived.cancel()
                break
            what, gate = arrived.result()
            await asyncio.wait_for(ticker.turns(5), 60)  # the loop runs while the hook waits
            notes.append((what, len(script.requests)))
            assert not caller.done(), f"the caller had its outcome while {what!r} was held"
            gate.set()
        return await caller, notes
    finally:
        ticking.cancel()


@pytest.mark.parametrize("case", list(CASES))
async def test_an_async_client_awaits_its_hooks_around_the_request(case: str) -> None:
    """While the start hook waits the upstream has no request; while the end hook waits
    the caller has no outcome; the loop keeps running through both."""
    turn, expected = CASES[case]
    script = Script().chat(turn)
    hooks = Held()
    client = AsyncLiteLLMClient(BASE_URL, TOKEN, transport=ScriptedTransport(script))
    client.observe(on_start=hooks.start, on_end=hooks.end)
    async with client:
        outcome, notes = await _held_through(lambda: _acall(client, case), hooks, script)
    assert notes == expected
    last = expected[-1][0]
    if last in ("ok", "closed"):
        assert isinstance(outcome, list)
        assert len(outcome) == 1 if last == "closed" else outcome
        assert (hooks.outcomes[-1][1] is not None) == (last == "ok")
    else:
        assert type(outcome).__name__ == last
    assert len(script.requests) == (0 if "render" in case else 1)


@pytest.mark.parametrize("case", list(CASES))
def test_a_sync_client_calls_the_same_hooks_in_the_same_order(case: str) -> None:
    """The sync client's plain hooks see each case's start and ending as the async
    client's do."""
    turn, expected = CASES[case]
    script = Script().chat(turn)
    notes: list[tuple[str, int]] = []

    def start(call: Call) -> None:
        notes.append(("start", len(script.requests)))

    def end(call: Call, usage: Usage | None, outcome: str) -> None:
        notes.append((outcome, len(script.requests)))

    with LiteLLMClient(BASE_URL, TOKEN, transport=ScriptedTransport(script)) as client:
        client.observe(on_start=start, on_end=end)
        _call(client, case)
    assert notes == expected


async def test_an_async_start_hook_that_raises_sends_nothing() -> None:
    """A start hook's exception reaches the caller, no request leaves and no ending is told."""
    script = Script().chat(reply("never sent"))
    ends: list[str] = []

    async def start(call: Call) -> None:
        await asyncio.sleep(0)
        raise OSError("the start could not be recorded")

    async def end(call: Call, usage: Usage | None, outcome: str) -> None:
        ends.append(outcome)

    async with AsyncLiteLLMClient(BASE_URL, TOKEN, transport=ScriptedTransport(script)) as client:
        client.observe(on_start=start, on_end=end)
        with pytest.raises(OSError, match="could not be recorded"):
            await client.complete(LOG, None, MODEL)
        with pytest.raises(OSError, match="could not be recorded"):
            async with client.stream(LOG, None, MODEL):
                pass
    assert script.requests == []
    assert ends == []


async def test_the_end_hook_runs_before_on_usage_and_its_error_reaches_the_caller() -> None:
    """A success is told to the end hook first, then ``on_usage``; an end hook that raises
    hands its exception to the caller instead of the reply, and ``on_usage`` is not told."""
    script = Script().chat(
        reply("one", usage=Tokens(input=10, output=1)),
        reply("two", usage=Tokens(input=20, output=2)),
    )
    order: list[str] = []
    fail = False

    async def end(call: Call, usage: Usage | None, outcome: str) -> None:
        await asyncio.sleep(0)
        order.append(f"end {outcome} {usage.input if usage else None}")
        if fail:
            raise OSError("the end could not be recorded")

    def on_usage(usage: Usage, model: str) -> None:
        order.append(f"usage {usage.input}")

    transport = ScriptedTransport(script)
    async with AsyncLiteLLMClient(BASE_URL, TOKEN, transport=transport, on_usage=on_usage) as c:
        c.observe(on_end=end)
        await c.complete(LOG, None, MODEL)
        fail = True
        with pytest.raises(OSError, match="could not be recorded"):
            await c.complete(LOG, None, MODEL)
    assert order == ["end ok 10", "usage 10", "end ok 20"]


async def test_a_render_failure_in_a_stream_raises_on_entering_once_told() -> None:
    """Without an end hook a stream's render failure raises where ``stream()`` is called;
    with one, on entering the stream, after the hook has the ending."""
    script = Script()
    async with AsyncLiteLLMClient(BASE_URL, TOKEN, transport=ScriptedTransport(script)) as client:
        with pytest.raises(RenderError):
            client.stream(UNRENDERABLE, None, MODEL)
        told: list[str] = []

        async def end(call: Call, usage: Usage | None, outcome: str) -> None:
            told.append(outcome)

        client.observe(on_end=end)
        stream = client.stream(UNRENDERABLE, None, MODEL)
        assert told == []
        with pytest.raises(RenderError):
            async with stream:
                pass
    assert told == ["RenderError"]
    assert script.requests == []


def test_stream_interrupted_is_the_broken_streams_outcome() -> None:
    """The broken-stream case is what its name says (so its expected outcome means it)."""
    script = Script().chat(cut_after(reply(LONG), 1500))
    with LiteLLMClient(BASE_URL, TOKEN, transport=ScriptedTransport(script)) as client:
        assert isinstance(_call(client, "stream broken"), StreamInterrupted)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_routers_record_of_a_call_that_cannot_be_rendered(tmp_path: Any, mode: str) -> None:
    """A call whose log cannot be rendered leaves one record, its outcome and no start,
    through either router, streamed or not; nothing is sent."""
    from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
    from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
    from tests.task.helpers import make_pin

    path = tmp_path / "task.jsonl"
    script = Script()
    options: dict[str, Any] = {"transport": ScriptedTransport(script)}
    if mode == "sync":
        with RoleRouter.from_pin(make_pin(), store=FileTaskStore(path), **options) as llm:
            with pytest.raises(RenderError):
                llm.complete("executor", UNRENDERABLE, None)
            with pytest.raises(RenderError), llm.stream("executor", UNRENDERABLE, None):
                pass
    else:
        async with AsyncRoleRouter.from_pin(
            make_pin(), store=AsyncFileTaskStore(path), **options
        ) as allm:
            with pytest.raises(RenderError):
                await allm.complete("executor", UNRENDERABLE, None)
            with pytest.raises(RenderError):
                async with allm.stream("executor", UNRENDERABLE, None):
                    pass
    calls = [r.llm_call for r in FileTaskStore(path).read().calls]
    assert [(c.role, c.outcome, c.start) for c in calls] == [("executor", "RenderError", None)] * 2
    assert script.requests == []
