"""nisse_llm's own clients against `ScriptedTransport`: the in-process form agent authors use."""

from __future__ import annotations

import json

import pytest

from nisse_llm.errors import BudgetExhausted, TruncatedResponse, UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.testing import (
    Script,
    ScriptedTransport,
    Tokens,
    ToolUse,
    anthropic_failure,
    openai_failure,
    reply,
    truncated,
)
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from tests.corpus import READ_FILE

BASE = "http://proxy.test"


def test_chat_client_runs_a_tool_loop_in_process() -> None:
    """`LiteLLMClient` over the transport parses scripted calls and sends the results back."""
    script = Script().chat(
        reply(ToolUse("read_file", {"path": "a.py"}), usage=Tokens(input=50, output=9)),
        reply("a.py prints hello."),
    )
    with LiteLLMClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        log: list[CanonicalEvent] = [UserText(text="What does a.py do?")]
        (call,) = client.complete(log, [READ_FILE], "gpt-x")
        assert isinstance(call, ToolCall)
        assert client.last_usage is not None
        assert (client.last_usage.input, client.last_usage.output) == (50, 9)
        log += [call, ToolResult(call_id=call.call_id, output="print('hello')")]
        assert client.complete(log, [READ_FILE], "gpt-x") == [
            AssistantText(text="a.py prints hello.", model="gpt-x")
        ]
    first, second = script.requests
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.path == "/chat/completions"
    tool_message = second.json["messages"][-1]
    assert tool_message == {
        "role": "tool",
        "tool_call_id": call.call_id,
        "content": "print('hello')",
    }


def test_passthrough_client_sends_anthropic_headers_in_process() -> None:
    """`AnthropicPassthroughClient` posts /v1/messages with the key and version headers."""
    script = Script().messages(reply("hi"))
    with AnthropicPassthroughClient(
        BASE, "sk-test", transport=ScriptedTransport(script), max_tokens=512
    ) as client:
        assert client.complete([UserText(text="hello")], None, "claude-x") == [
            AssistantText(text="hi", model="claude-x")
        ]
    (request,) = script.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert json.loads(request.body)["max_tokens"] == 512


def test_scripted_429_with_retry_after_is_waited_out_once() -> None:
    """A scripted 429 with retry-after makes the client sleep that long and retry once."""
    slept: list[float] = []
    script = Script().chat(
        openai_failure(
            429, "Rate limit reached", type="rate_limit_error", headers={"retry-after": "2"}
        ),
        reply("after the wait"),
    )
    with LiteLLMClient(
        BASE, "sk-test", transport=ScriptedTransport(script), sleep=slept.append
    ) as client:
        assert client.complete([UserText(text="go")], None, "gpt-x") == [
            AssistantText(text="after the wait", model="gpt-x")
        ]
    assert slept == [2.0]
    assert len(script.requests) == 2


def test_scripted_budget_refusal_is_not_retried() -> None:
    """A scripted LiteLLM budget refusal is `BudgetExhausted` after one request and no sleep."""
    slept: list[float] = []
    script = Script().chat(
        openai_failure(
            429,
            "No deployments available - crossed budget: Exceeded budget for deployment x",
            type="None",
            code="429",
        ),
        reply("never sent"),
    )
    with (
        LiteLLMClient(
            BASE, "sk-test", transport=ScriptedTransport(script), sleep=slept.append
        ) as client,
        pytest.raises(BudgetExhausted),
    ):
        client.complete([UserText(text="go")], None, "gpt-x")
    assert slept == []
    assert len(script.requests) == 1


async def test_async_clients_use_the_same_transport() -> None:
    """The async twins are answered by the same transport object, on both routes."""
    transport = ScriptedTransport()
    transport.script.chat(truncated("cut")).messages(
        anthropic_failure(529, "overloaded_error", "Overloaded")
    )
    async with AsyncLiteLLMClient(BASE, "sk-test", transport=transport) as chat:
        with pytest.raises(TruncatedResponse):
            await chat.complete([UserText(text="go")], None, "gpt-x")
    async with AsyncAnthropicPassthroughClient(BASE, "sk-test", transport=transport) as messages:
        with pytest.raises(UpstreamUnavailable) as caught:
            await messages.complete([UserText(text="go")], None, "claude-x")
    assert caught.value.status == 529
    assert [r.route for r in transport.script.requests] == ["openai_chat", "anthropic_messages"]
