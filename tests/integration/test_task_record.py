"""The task file through the real proxy: three concurrent agents scripted by request
matching, every call recorded under its role, and the task resumed with its totals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nisse_llm.config.settings import load_settings
from nisse_llm.errors import UpstreamUnavailable
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    ToolCall,
    ToolResult,
    Usage,
    UserText,
)
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
from nisse_llm.testing import Script, Tokens, ToolUse, reply, slow
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import AsyncRoleRouter
from tests.corpus import READ_FILE

pytestmark = pytest.mark.proxy

ROLES = {
    "planner": "claude-scripted",
    "executor": "gpt-scripted",
    "delegate": "claude-alt",
    "consultant": "gpt-down",
}


def test_three_agents_through_the_proxy_are_recorded_and_resumed(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path
) -> None:
    """Planner, executor and delegate run at once through the proxy, each given its own
    turns by what its request says; the task file records each call under its role with
    the usage the client parsed, a failed call with its error class, and resumes to
    the same totals."""
    pin = load_settings(
        None, llm={"base_url": proxy.base_url, "token": proxy.token}, roles=ROLES
    ).pin()
    path = tmp_path / "task.jsonl"
    FileTaskStore(path).begin(pin)
    agents = ("planner", "executor", "delegate")
    for n, role in enumerate(agents):
        script.when(
            slow(
                reply(ToolUse("read_file", {"path": f"{role}.py"}), usage=Tokens(100 * (n + 1), 7)),
                0.2 * (3 - n),
            ),
            user_text=f"You are the {role}.",
        )
        script.when(
            reply(f"{role} done.", usage=Tokens(1000 * (n + 1), 11)),
            tool_result=f"source of {role}.py",
        )
    seen: list[tuple[str | None, Usage]] = []

    async def agent(llm: AsyncRoleRouter, role: str) -> list[CanonicalEvent]:
        log: list[CanonicalEvent] = [UserText(text=f"You are the {role}. Read your file.")]
        log += await llm.complete(role, log, [READ_FILE])
        call = log[-1]
        assert isinstance(call, ToolCall), (role, log)
        log.append(ToolResult(call_id=call.call_id, output=f"source of {call.arguments['path']}"))
        log += await llm.complete(role, log, [READ_FILE])
        return log

    async def main() -> list[list[CanonicalEvent]]:
        async with AsyncRoleRouter.from_pin(
            pin,
            store=AsyncFileTaskStore(path),
            on_usage=lambda usage, model: seen.append((model, usage)),
        ) as llm:
            logs = await asyncio.gather(*(agent(llm, role) for role in agents))
            with pytest.raises(UpstreamUnavailable):
                await llm.complete("consultant", [UserText(text="anyone there?")], None)
        return list(logs)

    logs = asyncio.run(main())

    for role, log in zip(agents, logs, strict=True):
        assert log[-1] == AssistantText(text=f"{role} done.", model=ROLES[role])
    calls = [record.llm_call for record in FileTaskStore(path).read().calls]
    assert sorted((c.role or "", c.outcome) for c in calls) == sorted(
        [(role, "ok") for role in agents for _ in range(2)]
        + [("consultant", "UpstreamUnavailable")]
    )
    for call in calls:
        assert call.model == ROLES[call.role or ""]
        assert call.route == pin.route(call.role or "")
    # Every call the proxy answered, failed ones too, is recorded with the proxy's call id.
    assert all(c.call is not None and c.call.call_id for c in calls), calls
    assert len({c.call.call_id for c in calls if c.call}) == 7
    # The records hold exactly the usage the client parsed from each reply.
    assert sorted(repr(c.usage) for c in calls if c.outcome == "ok") == sorted(
        repr(usage) for _, usage in seen
    )
    task = FileTaskStore(path).resume(proxy.token, base_url=proxy.base_url)
    assert task.pin == pin
    assert task.usage.total.calls == 7
    assert task.usage.total.output == sum(usage.output for _, usage in seen)
    assert task.usage.total.input == sum(usage.input for _, usage in seen)
    for role in agents:
        assert task.usage.by_role[role].calls == 2
        assert task.usage.by_role[role].output == 7 + 11
    assert task.usage.by_role["consultant"].calls == 1
