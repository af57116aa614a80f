"""The Responses clients end to end over the scripted upstream: a tool loop with reasoning
carried from turn to turn, sync and async, streamed and not, and structured answers."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import AsyncOpenAIResponsesClient, OpenAIResponsesClient, RequestOptions
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.testing import Script, ScriptedTransport, Thinking, Tokens, ToolUse, reply
from tests.routes.openai_responses.judges import judge_request

MODEL = "gpt-6-astra"
LS = ToolSpec(name="ls", description="List a folder.", parameters={"type": "object"})
OPTIONS = RequestOptions(reasoning="high")


def _script() -> Script:
    return Script().responses(
        reply(Thinking("List the root first.", "gAAAA-one"), ToolUse("ls", {"path": "."})),
        reply(Thinking("Now the docs.", "gAAAA-two"), ToolUse("ls", {"path": "docs"})),
        reply("Two folders: . and docs.", usage=Tokens(input=900, output=40, cache_read=600)),
    )


async def _turn(client: Any, log: list[CanonicalEvent], streamed: bool) -> list[CanonicalEvent]:
    sync = isinstance(client, OpenAIResponsesClient)
    if not streamed:
        result = client.complete(log, [LS], MODEL, "Be brief.", options=OPTIONS)
        return list(result if sync else await result)
    if sync:
        with client.stream(log, [LS], MODEL, "Be brief.", options=OPTIONS) as stream:
            for _ in stream:
                pass
        return stream.events
    async with client.stream(log, [LS], MODEL, "Be brief.", options=OPTIONS) as stream:
        async for _ in stream:
            pass
    return stream.events


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("cls", [OpenAIResponsesClient, AsyncOpenAIResponsesClient])
async def test_a_three_turn_tool_loop_carries_its_reasoning(cls: type[Any], streamed: bool) -> None:
    """Each turn's reasoning item goes back byte for byte on the next request, in its place
    before the call it led to; every request is stateless and shares one cache key."""
    script = _script()
    client = cls("http://proxy.test", "sk-test", transport=ScriptedTransport(script))
    log: list[CanonicalEvent] = [UserText(text="What folders are there?")]
    try:
        for _ in range(3):
            events = await _turn(client, log, streamed)
            log.extend(events)
            log.extend(
                ToolResult(call_id=e.call_id, output=f"listing of {e.arguments['path']}")
                for e in events
                if isinstance(e, ToolCall)
            )
    finally:
        if isinstance(client, OpenAIResponsesClient):
            client.close()
        else:
            await client.aclose()
    bodies = [request.json for request in script.requests]
    assert [request.path for request in script.requests] == ["/v1/responses"] * 3
    for body in bodies:
        judge_request({key: value for key, value in body.items() if key != "stream"})
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert "previous_response_id" not in body
        assert body.get("stream", False) is streamed
    assert len({body["prompt_cache_key"] for body in bodies}) == 1
    third = [(item["type"], item.get("encrypted_content")) for item in bodies[2]["input"]]
    assert third == [
        ("message", None),
        ("reasoning", "gAAAA-one"),
        ("function_call", None),
        ("function_call_output", None),
        ("reasoning", "gAAAA-two"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    reasoning = [e for e in log if isinstance(e, Reasoning)]
    assert [e.block["encrypted_content"] for e in reasoning] == ["gAAAA-one", "gAAAA-two"]
    assert all(e.model == MODEL for e in reasoning)
    assert log[-1] == AssistantText(text="Two folders: . and docs.", model=MODEL)
    usage = client.last_usage
    assert (usage.input, usage.output, usage.cache_read) == (900, 40, 600)


class Verdict(BaseModel):
    """A verdict on a change."""

    approve: bool
    reason: str


def test_a_structured_answer_is_asked_through_text_format() -> None:
    """``complete_as`` asks a current OpenAI model for a strict JSON Schema in ``text.format``
    and validates the answer."""
    script = Script().responses(reply('{"approve": true, "reason": "tests pass"}'))
    with OpenAIResponsesClient(
        "http://proxy.test", "sk-test", transport=ScriptedTransport(script)
    ) as client:
        typed = client.complete_as(Verdict, [UserText(text="Review it.")], [], MODEL)
    assert typed.value == Verdict(approve=True, reason="tests pass")
    body = script.requests[0].json
    judge_request(body)
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["strict"] is True
    assert body["text"]["format"]["schema"]["additionalProperties"] is False


def test_the_client_names_its_route_and_endpoint() -> None:
    """The client posts to ``/v1/responses`` and reports its route."""
    client = OpenAIResponsesClient("http://proxy.test/litellm", "sk-secret-123")
    try:
        assert client.route == "openai_responses"
        assert "/litellm/v1/responses" in repr(client)
        assert "sk-secret-123" not in repr(client)
    finally:
        client.close()
