"""An `AsyncRoleRouter` with a store: begun before its first call (it cannot await in its
constructor), every record awaited."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import (
    AsyncFileTaskStore,
    FileTaskStore,
    TaskPinMismatch,
)
from nisse_llm.testing import Script, ScriptedTransport, reply
from nisse_llm.transport.routers import AsyncRoleRouter
from tests.task.helpers import BASE_URL, TOKEN, make_pin


async def test_an_async_router_begins_its_store_before_its_first_call(tmp_path: Path) -> None:
    """Built, the router has written nothing; its first call writes the pin's header before
    the call's start record; with ``strict_pin`` a task begun with another pin is refused at
    the first call, unsent, or at ``begin_task``; without, the call takes its own model."""
    path = tmp_path / "task.jsonl"
    script = Script().chat(reply("done"))
    async with AsyncRoleRouter.from_pin(
        make_pin(), store=AsyncFileTaskStore(path), transport=ScriptedTransport(script)
    ) as llm:
        assert not path.exists() or path.read_bytes() == b""
        await llm.complete("executor", [UserText(text="go")], None)
    found = FileTaskStore(path).read()
    ((start,), (end,)) = found.starts, found.calls
    assert (start.seq, start.llm_call.outcome) == (1, "started")  # after the header, 0
    assert (end.seq, end.llm_call.outcome, end.llm_call.start) == (2, "ok", 1)
    assert FileTaskStore(path).resume(TOKEN, base_url=BASE_URL).pin == make_pin()

    FileTaskStore(tmp_path / "other.jsonl").begin(make_pin(executor="gpt-4.1"))
    other = AsyncFileTaskStore(tmp_path / "other.jsonl")
    script = Script().chat(reply("never sent"))
    transport = ScriptedTransport(script)
    async with AsyncRoleRouter.from_pin(
        make_pin(), store=other, transport=transport, strict_pin=True
    ) as llm:
        with pytest.raises(TaskPinMismatch):
            await llm.begin_task()
        with pytest.raises(TaskPinMismatch):
            await llm.complete("executor", [UserText(text="go")], None)
    assert script.requests == []
    async with AsyncRoleRouter.from_pin(make_pin(), store=other, transport=transport) as llm:
        await llm.complete("executor", [UserText(text="go")], None)
        assert llm.pin_changes == ("roles.executor",)
    assert [r.model for r in script.requests] == ["gpt-4.1"]


async def test_an_async_routers_stream_over_a_task_begun_with_another_pin(tmp_path: Path) -> None:
    """A stream is resolved before the router can learn a resumed task's own pin: unless
    ``begin_task`` was awaited first, it is refused before its request leaves; awaited
    first, it goes to the task's own model."""
    path = tmp_path / "task.jsonl"
    FileTaskStore(path).begin(make_pin(executor="gpt-4.1"))
    script = Script().chat(reply("on the task's own model"))
    transport = ScriptedTransport(script)
    log = [UserText(text="go")]
    async with AsyncRoleRouter.from_pin(
        make_pin(), store=AsyncFileTaskStore(path), transport=transport
    ) as llm:
        with pytest.raises(ValueError, match=r"await router\.begin_task"):
            async with llm.stream("executor", log, None) as stream:
                [d async for d in stream]
    assert script.requests == []
    async with AsyncRoleRouter.from_pin(
        make_pin(), store=AsyncFileTaskStore(path), transport=transport
    ) as llm:
        await llm.begin_task()
        async with llm.stream("executor", log, None) as stream:
            [d async for d in stream]
    assert [r.model for r in script.requests] == ["gpt-4.1"]
