"""`Script.when`: replies chosen by what a request says, so concurrent agents can be scripted."""

from __future__ import annotations

import asyncio
import threading

import pytest

from nisse_llm.errors import UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.testing import (
    Script,
    ScriptedTransport,
    ToolUse,
    reply,
    slow,
)
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from tests.corpus import READ_FILE

BASE = "http://proxy.test"
CLIENTS = {"chat": LiteLLMClient, "messages": AnthropicPassthroughClient}
ASYNC_CLIENTS = {"chat": AsyncLiteLLMClient, "messages": AsyncAnthropicPassthroughClient}


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_recorded_request_reads_model_user_text_and_tool_results(route: str) -> None:
    """Both body shapes expose the model, user texts and tool outputs, in order."""
    script = Script()
    log: list[CanonicalEvent] = [
        UserText(text="first ask"),
        ToolCall(call_id="call_1", tool="read_file", arguments={"path": "a"}),
        ToolResult(call_id="call_1", output="out one"),
        UserText(text="second ask"),
        ToolCall(call_id="call_2", tool="read_file", arguments={"path": "b"}),
        ToolResult(call_id="call_2", output="out two", is_error=True),
    ]
    script.add("openai_chat" if route == "chat" else "anthropic_messages", reply("ok"))
    with CLIENTS[route](BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        client.complete(log, [READ_FILE], "some-model")

    (request,) = script.requests
    assert request.model == "some-model"
    assert request.user_texts == ["first ask", "second ask"]
    assert request.last_user_text == "second ask"
    assert request.tool_results[0] == "out one"
    assert request.last_tool_result is not None
    assert request.last_tool_result.endswith("out two")  # chat marks it "[tool error] "


def test_rules_match_on_every_criterion_and_fall_back_to_the_queue() -> None:
    """A rule answers only requests meeting all its criteria, in its own order; the
    route's plain queue answers the rest; `pending` counts both."""
    script = Script()
    script.when(reply("by model"), model="gpt-b")
    script.when(reply("by text 1"), reply("by text 2"), user_text="needle")
    script.when(reply("by result"), tool_result="42")
    script.when(reply("by predicate"), where=lambda r: len(r.user_texts) == 2)
    script.when(reply("wrong route"), route="anthropic_messages")
    script.chat(reply("plain"))
    assert script.pending() == 7
    assert script.pending("openai_chat") == 6

    def ask(*events: CanonicalEvent, model: str = "gpt-a") -> str:
        with LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
            (answer,) = client.complete(list(events), [READ_FILE], model)
        assert isinstance(answer, AssistantText)
        return answer.text

    call = ToolCall(call_id="call_1", tool="read_file", arguments={})
    assert ask(UserText(text="x"), model="gpt-b") == "by model"
    assert ask(UserText(text="a needle here")) == "by text 1"
    assert ask(UserText(text="x"), call, ToolResult(call_id="call_1", output="is 42")) == (
        "by result"
    )
    assert ask(UserText(text="needle again")) == "by text 2"
    assert ask(UserText(text="one"), UserText(text="two")) == "by predicate"
    assert ask(UserText(text="anything")) == "plain"
    assert script.pending() == 1
    client = LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script))
    with client, pytest.raises(UpstreamUnavailable, match="no turn left for openai_chat"):
        client.complete([UserText(text="more")], None, "gpt-a")


def test_when_refuses_a_bad_route_or_turn() -> None:
    """A misspelt route or a non-turn is refused when scripted, not when answered."""
    with pytest.raises(ValueError, match="unknown route"):
        Script().when(reply("x"), route="chat")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a turn"):
        Script().when("x")  # type: ignore[arg-type]


def _agent_script(agents: int) -> Script:
    """Each agent: a tool call, then a final answer naming its tool's output; replies to
    later agents arrive sooner, so requests interleave out of order."""
    script = Script()
    for n in range(agents):
        delay = 0.05 * (agents - n)
        script.when(
            slow(reply(f"agent {n} looks.", ToolUse("read_file", {"path": f"{n}.py"})), delay),
            user_text=f"agent {n}:",
        )
        script.when(slow(reply(f"agent {n} is done."), delay / 2), tool_result=f"body of {n}.py")
    return script


def _check_agent(n: int, log: list[CanonicalEvent]) -> None:
    assert isinstance(log[1], AssistantText)
    assert log[1].text == f"agent {n} looks."
    assert isinstance(log[2], ToolCall)
    assert log[2].arguments == {"path": f"{n}.py"}
    assert log[-1] == AssistantText(text=f"agent {n} is done.", model="model-x")


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_three_concurrent_async_agents_each_get_their_own_replies(route: str) -> None:
    """Three asyncio agents on one client and one script each get their own two turns."""
    script = _agent_script(3)

    async def agent(
        client: AsyncLiteLLMClient | AsyncAnthropicPassthroughClient, n: int
    ) -> list[CanonicalEvent]:
        log: list[CanonicalEvent] = [UserText(text=f"agent {n}: read your file")]
        log += await client.complete(log, [READ_FILE], "model-x")
        call = log[-1]
        assert isinstance(call, ToolCall)
        log.append(ToolResult(call_id=call.call_id, output=f"body of {call.arguments['path']}"))
        log += await client.complete(log, [READ_FILE], "model-x")
        return log

    async def main() -> list[list[CanonicalEvent]]:
        transport = ScriptedTransport(script)
        async with ASYNC_CLIENTS[route](BASE, "sk-test", transport=transport) as client:
            return list(await asyncio.gather(*(agent(client, n) for n in range(3))))

    logs = asyncio.run(main())

    for n, log in enumerate(logs):
        _check_agent(n, log)
    assert script.pending() == 0
    assert script.unscripted == []
    # The agents really interleaved: agent 2's first reply came soonest, so its second
    # request arrived first, while the plain FIFO order would have been 0, 1, 2.
    seconds = [r.last_tool_result for r in script.requests if r.tool_results]
    assert seconds == ["body of 2.py", "body of 1.py", "body of 0.py"]


def test_three_agent_threads_each_get_their_own_replies() -> None:
    """Three threads, one client each, one shared script: each gets its own turns."""
    script = _agent_script(3)
    logs: dict[int, list[CanonicalEvent]] = {}

    def agent(n: int) -> None:
        with LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
            log: list[CanonicalEvent] = [UserText(text=f"agent {n}: read your file")]
            log += client.complete(log, [READ_FILE], "model-x")
            call = log[-1]
            assert isinstance(call, ToolCall)
            log.append(ToolResult(call_id=call.call_id, output=f"body of {call.arguments['path']}"))
            log += client.complete(log, [READ_FILE], "model-x")
            logs[n] = log

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(logs) == [0, 1, 2]
    for n, log in logs.items():
        _check_agent(n, log)
    assert script.pending() == 0
