"""The testing kit speaks the Responses route: replies, reasoning items, incomplete and failed."""

from __future__ import annotations

import json

import httpx
import pytest

from nisse_llm.errors import LLMError, TruncatedResponse
from nisse_llm.events.canonical import AssistantText, Reasoning, ToolCall, ToolResult, UserText
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer
from nisse_llm.testing import (
    Script,
    ScriptedServer,
    ScriptedTransport,
    Thinking,
    ToolUse,
    reply,
    responses_failure,
    route_of_path,
    truncated,
)
from tests.routes.openai_responses.judges import official_reply

RESPONSES = OpenAIResponsesRenderer()


@pytest.mark.parametrize("path", ["/responses", "/v1/responses", "/api/v1/responses/"])
def test_both_responses_paths_are_the_responses_route(path: str) -> None:
    """``/responses`` (the proxy's bridge) and ``/v1/responses`` (a client) both match."""
    assert route_of_path(path) == "openai_responses"


def _post(script: Script, body: dict[str, object], path: str = "/v1/responses") -> httpx.Response:
    with httpx.Client(transport=ScriptedTransport(script), base_url="http://up.test") as http:
        return http.post(path, json=body)


def test_a_scripted_reply_is_a_responses_body_the_sdk_and_the_parser_read() -> None:
    """Thinking, text and a call become a reasoning item with encrypted content, a message
    and a function call, read alike by the official SDK and the library."""
    script = Script().responses(
        reply(Thinking("Look first.", "gAAAA-secret"), "Listing.", ToolUse("ls", {"path": "."}))
    )
    answer = _post(script, {"model": "gpt-6-astra", "input": [{"role": "user", "content": "go"}]})
    assert answer.status_code == 200
    raw = answer.json()
    official = official_reply(raw)
    assert [item.type for item in official.output] == ["reasoning", "message", "function_call"]
    completion = RESPONSES.parse(answer.content, requested_model="gpt-6-astra")
    reasoning, text, call = completion.events
    assert isinstance(text, AssistantText)
    assert text.text == "Listing."
    assert isinstance(reasoning, Reasoning)
    assert reasoning.block["encrypted_content"] == "gAAAA-secret"
    assert reasoning.block["summary"] == [{"type": "summary_text", "text": "Look first."}]
    assert isinstance(call, ToolCall)
    assert call.arguments == {"path": "."}
    assert official.output_text == "Listing."
    assert completion.usage.input > 0


def test_the_reasoning_item_comes_back_on_the_next_turn() -> None:
    """A request rendered from the parsed turn carries the scripted reasoning item back,
    and the script sees its function-call output as the last tool result."""
    script = Script().responses(reply(Thinking("t", "gAAAA-1"), ToolUse("ls")), reply("done"))
    first = _post(script, {"model": "gpt-6-astra", "input": [{"role": "user", "content": "go"}]})
    events = RESPONSES.parse(first.content, requested_model="gpt-6-astra").events
    call = events[-1]
    assert isinstance(call, ToolCall)
    log = [UserText(text="go"), *events, ToolResult(call_id=call.call_id, output="a.py")]
    _post(script, RESPONSES.render(log, [], "gpt-6-astra"))
    second = script.requests[1]
    assert second.route == "openai_responses"
    assert second.last_tool_result == "a.py"
    assert second.last_user_text == "go"
    reasoning = [item for item in second.json["input"] if item.get("type") == "reasoning"]
    assert [item["encrypted_content"] for item in reasoning] == ["gAAAA-1"]


def test_truncated_and_failed_replies_map_to_the_library_errors() -> None:
    """``truncated`` is status incomplete at the ceiling, `responses_failure` status failed."""
    script = Script().responses(
        truncated("half an ans"), responses_failure("server_error", "The model broke.")
    )
    body = {"model": "gpt-6-astra", "input": [{"role": "user", "content": "go"}]}
    cut = _post(script, body)
    assert cut.json()["incomplete_details"] == {"reason": "max_output_tokens"}
    with pytest.raises(TruncatedResponse):
        RESPONSES.parse(cut.content, requested_model="gpt-6-astra")
    failed = _post(script, body, "/responses")
    assert failed.status_code == 200
    with pytest.raises(LLMError, match="server_error"):
        RESPONSES.parse(failed.content, requested_model="gpt-6-astra")


def test_the_loopback_server_answers_the_responses_route() -> None:
    """`ScriptedServer` serves ``/v1/responses`` over real HTTP."""
    script = Script().responses(reply("hello"))
    with ScriptedServer(script) as server:
        answer = httpx.post(
            f"{server.base_url}/v1/responses",
            content=json.dumps({"model": "gpt-5.6-sol", "input": []}),
        )
    assert answer.json()["output"][0]["content"][0]["text"] == "hello"
    assert script.requests_to("openai_responses")[0].model == "gpt-5.6-sol"


def _events(data: bytes) -> list[tuple[str, dict[str, object]]]:
    found = []
    for block in data.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_a_streamed_request_gets_responses_events_the_sdk_accepts() -> None:
    """A request with ``stream: true`` gets named, numbered Responses events, each valid
    for the SDK's stream event types, deltas adding up to the items, the whole body last."""
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import TypeAdapter

    script = Script().responses(
        reply(Thinking("Think it over.", "gAAAA-2"), "Hello there, world.", ToolUse("ls", {"a": 1}))
    )
    answer = _post(script, {"model": "gpt-6-astra", "input": [], "stream": True})
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = _events(answer.content)
    adapter = TypeAdapter(ResponseStreamEvent)
    for _, data in events:
        adapter.validate_python(data)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert all(name == data["type"] for name, data in events)
    assert events[0][0] == "response.created"
    assert events[-1][0] == "response.completed"
    final = Response.model_validate(events[-1][1]["response"])
    text = "".join(str(d["delta"]) for n, d in events if n == "response.output_text.delta")
    assert text == final.output_text == "Hello there, world."
    arguments = "".join(
        str(d["delta"]) for n, d in events if n == "response.function_call_arguments.delta"
    )
    assert json.loads(arguments) == {"a": 1}
    summary = "".join(
        str(d["delta"]) for n, d in events if n == "response.reasoning_summary_text.delta"
    )
    assert summary == "Think it over."
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert done == events[-1][1]["response"]["output"]  # type: ignore[index]


def test_a_truncated_stream_ends_with_response_incomplete() -> None:
    """A truncated reply streamed ends in ``response.incomplete``, not ``completed``."""
    script = Script().responses(truncated("half"))
    answer = _post(script, {"model": "gpt-6-astra", "input": [], "stream": True})
    assert _events(answer.content)[-1][0] == "response.incomplete"
