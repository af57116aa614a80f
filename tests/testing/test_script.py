"""The scripting core: turns per route, recorded requests, and provider-shaped bodies."""

from __future__ import annotations

import json
import time

import anthropic.types
import openai.types.chat
import pytest

from nisse_llm.testing import (
    Disconnect,
    RedactedThinking,
    Script,
    Thinking,
    Tokens,
    ToolUse,
    anthropic_failure,
    failure,
    openai_failure,
    reply,
    route_of_path,
    slow,
    truncated,
)
from nisse_llm.testing.script import RecordedRequest
from nisse_llm.testing.turns import Turn

CHAT_REQUEST = json.dumps(
    {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}
).encode()
MESSAGES_REQUEST = json.dumps(
    {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
).encode()


def _json(body: bytes) -> dict[str, object]:
    data = json.loads(body)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/chat/completions", "openai_chat"),
        ("/v1/chat/completions", "openai_chat"),
        ("/api/v1/chat/completions?x=1", "openai_chat"),
        ("/v1/messages", "anthropic_messages"),
        ("/v1/messages/", "anthropic_messages"),
        ("/responses", "openai_responses"),
        ("/v1/responses?x=1", "openai_responses"),
        ("/v1/embeddings", None),
        ("/messages", None),
    ],
)
def test_route_of_path_matches_the_path_end(path: str, route: str | None) -> None:
    """A path is routed by its end, so base URLs with prefixes still work."""
    assert route_of_path(path) == route


def test_each_route_answers_from_its_own_queue_in_order() -> None:
    """Chat requests take chat turns and messages requests take messages turns, in order."""
    script = Script().chat(reply("one"), reply("two")).messages(reply("three"))
    first = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    third = script.respond("POST", "/v1/messages", {}, MESSAGES_REQUEST)
    second = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    assert _json(first.body)["choices"][0]["message"]["content"] == "one"  # type: ignore[index]
    assert _json(second.body)["choices"][0]["message"]["content"] == "two"  # type: ignore[index]
    assert _json(third.body)["content"] == [{"type": "text", "text": "three"}]
    assert script.pending() == 0


def test_every_request_is_recorded_with_headers_body_and_json() -> None:
    """The script records method, path, lower-cased headers, raw body and parsed JSON."""
    script = Script().messages(reply("ok"))
    script.respond(
        "post", "/v1/messages", [("X-Api-Key", "k"), ("Anthropic-Version", "v")], MESSAGES_REQUEST
    )
    (request,) = script.requests
    assert request.method == "POST"
    assert request.path == "/v1/messages"
    assert request.route == "anthropic_messages"
    assert dict(request.headers) == {"x-api-key": "k", "anthropic-version": "v"}
    assert request.body == MESSAGES_REQUEST
    assert request.json == json.loads(MESSAGES_REQUEST)
    assert script.requests_to("anthropic_messages") == [request]
    assert script.requests_to("openai_chat") == []


def test_a_request_with_no_turn_left_gets_a_500_and_is_listed_as_unscripted() -> None:
    """Under-scripting fails loudly: a 500 naming the route, and the request in `unscripted`."""
    script = Script()
    answer = script.respond("POST", "/v1/messages", {}, MESSAGES_REQUEST)
    assert answer.status == 500
    assert _json(answer.body) == {
        "type": "error",
        "error": {
            "type": "api_error",
            "message": "scripted upstream: no turn left for anthropic_messages",
        },
    }
    assert [r.path for r in script.unscripted] == ["/v1/messages"]


def test_an_unknown_path_gets_a_404_and_is_listed_as_unscripted() -> None:
    """A path no route speaks (such as the embeddings API) is a 404, recorded."""
    script = Script().chat(reply("unused"))
    answer = script.respond("POST", "/v1/embeddings", {}, b"{}")
    assert answer.status == 404
    assert "no route for POST /v1/embeddings" in answer.body.decode()
    assert script.pending("openai_chat") == 1
    assert len(script.unscripted) == 1


def test_a_streaming_request_is_answered_as_server_sent_events() -> None:
    """A request with "stream": true gets the same reply as an event stream."""
    script = Script().chat(reply("x"))
    body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
    answer = script.respond("POST", "/chat/completions", {}, body)
    assert answer.status == 200
    assert ("content-type", "text/event-stream") in answer.headers
    assert answer.body.endswith(b"data: [DONE]\n\n")


def test_reset_forgets_turns_and_requests() -> None:
    """After `reset` the script is as new."""
    script = Script().chat(reply("a")).messages(reply("b"))
    script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    script.reset()
    assert (script.pending(), script.requests, script.unscripted) == (0, [], [])


def test_add_rejects_what_is_not_a_turn() -> None:
    """A string or an unknown route is refused when scripting, not when answering."""
    with pytest.raises(TypeError, match="not a turn"):
        Script().chat("hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown route"):
        Script().add("responses", reply("x"))  # type: ignore[arg-type]


def test_error_turns_are_sent_as_given_with_their_headers() -> None:
    """A failure turn's status, body and headers reach the caller unchanged."""
    script = Script().chat(
        openai_failure(429, "slow down", type="rate_limit_error", headers={"retry-after": "7"}),
        failure(502, "<html>bad gateway</html>", headers={"content-type": "text/html"}),
    )
    limited = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    assert limited.status == 429
    assert _json(limited.body) == {
        "error": {"message": "slow down", "type": "rate_limit_error", "param": None, "code": None}
    }
    assert ("retry-after", "7") in limited.headers
    gateway = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    assert (gateway.status, gateway.body) == (502, b"<html>bad gateway</html>")
    assert dict(gateway.headers)["content-type"] == "text/html"


def test_anthropic_failure_has_the_anthropic_error_shape() -> None:
    """`anthropic_failure` builds ``{"type": "error", "error": {...}}``."""
    turn = anthropic_failure(529, "overloaded_error", "Overloaded")
    assert turn.status == 529
    assert json.loads(turn.body) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_delays_and_disconnects_are_passed_to_the_transport() -> None:
    """`slow` sets a delay on the answer; `Disconnect` asks for a dropped connection."""
    script = Script().chat(slow(reply("late"), 2.5), Disconnect(delay_s=0.5))
    late = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    dropped = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    assert (late.status, late.delay_s, late.disconnect) == (200, 2.5, False)
    assert (dropped.delay_s, dropped.disconnect) == (0.5, True)


def test_chat_reply_is_a_valid_openai_chat_completion() -> None:
    """Text, parallel tool calls and usage form a body the OpenAI SDK's model accepts."""
    turn = reply(
        "Reading both.",
        ToolUse("read_file", {"path": "a.py"}),
        ToolUse("read_file", {"path": "b.py"}),
        usage=Tokens(input=120, output=30, cache_read=100),
    )
    body = _json(Script().chat(turn).respond("POST", "/chat/completions", {}, CHAT_REQUEST).body)
    completion = openai.types.chat.ChatCompletion.model_validate(body)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Reading both."
    assert [
        (c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []
    ] == [  # type: ignore[union-attr]
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "b.py"}),
    ]
    assert completion.model == "gpt-x"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (120, 30)
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 100


def test_messages_reply_is_a_valid_anthropic_message() -> None:
    """Thinking, redacted thinking, text and a tool use form a body the Anthropic SDK accepts."""
    turn = reply(
        Thinking("Check the file first.", "c2lnbmF0dXJl"),
        RedactedThinking("ZW5jcnlwdGVk"),
        "Let me look.",
        ToolUse("read_file", {"path": "a.py"}, id="toolu_01"),
        usage=Tokens(input=1000, output=40, cache_read=600, cache_write=300),
    )
    body = _json(Script().messages(turn).respond("POST", "/v1/messages", {}, MESSAGES_REQUEST).body)
    message = anthropic.types.Message.model_validate(body)
    assert message.stop_reason == "tool_use"
    assert message.model == "claude-x"
    assert body["content"] == [
        {"type": "thinking", "thinking": "Check the file first.", "signature": "c2lnbmF0dXJl"},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.py"}},
    ]
    # Anthropic's input_tokens excludes cached tokens; Tokens.input counts them all.
    assert body["usage"] == {
        "input_tokens": 100,
        "output_tokens": 40,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 600,
    }


def test_truncated_replies_end_at_the_ceiling_on_both_routes() -> None:
    """Truncation is ``finish_reason: "length"`` on chat and ``stop_reason: "max_tokens"`` on messages."""
    script = Script().chat(truncated("par")).messages(truncated("par"))
    chat = _json(script.respond("POST", "/chat/completions", {}, CHAT_REQUEST).body)
    messages = _json(script.respond("POST", "/v1/messages", {}, MESSAGES_REQUEST).body)
    assert chat["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    assert messages["stop_reason"] == "max_tokens"


def test_raw_arguments_reach_the_chat_route_unparsed() -> None:
    """A script can send the non-JSON arguments weak models produce."""
    turn = reply(ToolUse("read_file", raw_arguments='{"path": '))
    body = _json(Script().chat(turn).respond("POST", "/chat/completions", {}, CHAT_REQUEST).body)
    call = body["choices"][0]["message"]["tool_calls"][0]  # type: ignore[index]
    assert call["function"]["arguments"] == '{"path": '


def test_usage_is_estimated_when_not_scripted() -> None:
    """Without scripted counts, input is about a token per four request bytes."""
    body = _json(
        Script().chat(reply("x" * 40)).respond("POST", "/chat/completions", {}, CHAT_REQUEST).body
    )
    assert body["usage"]["prompt_tokens"] == len(CHAT_REQUEST) // 4  # type: ignore[index]
    assert body["usage"]["completion_tokens"] == 10  # type: ignore[index]


def test_reply_model_overrides_the_echoed_model() -> None:
    """A reply may name a different model than the request (as proxy aliases do)."""
    body = _json(
        Script()
        .messages(reply("x", model="claude-real-2025"))
        .respond("POST", "/v1/messages", {}, MESSAGES_REQUEST)
        .body
    )
    assert body["model"] == "claude-real-2025"


def test_model_listings_are_answered_and_kept_apart() -> None:
    """``GET /v1/models`` (LiteLLM's background discovery) gets an empty list and stays out of `requests`."""
    script = Script()
    answer = script.respond("GET", "/v1/models", {"authorization": "Bearer k"}, b"")
    assert (answer.status, json.loads(answer.body)) == (200, {"object": "list", "data": []})
    assert script.requests == []
    assert script.unscripted == []
    assert [r.path for r in script.listings] == ["/v1/models"]
    script.reset()
    assert script.listings == []


def test_a_fallback_answers_when_the_queue_is_empty_and_survives_reset() -> None:
    """Queued turns come first; then the fallback maps each request to a turn, and nothing is unscripted."""
    seen: list[str] = []

    def fallback(request: RecordedRequest) -> Turn:
        seen.append(str(request.json["model"]))
        return reply(f"fallback for {request.route}")

    script = Script(fallback=fallback).chat(reply("queued"))
    first = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    second = script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    script.reset()
    third = script.respond("POST", "/v1/messages", {}, MESSAGES_REQUEST)
    assert _json(first.body)["choices"][0]["message"]["content"] == "queued"  # type: ignore[index]
    assert _json(second.body)["choices"][0]["message"]["content"] == "fallback for openai_chat"  # type: ignore[index]
    assert _json(third.body)["content"] == [
        {"type": "text", "text": "fallback for anthropic_messages"}
    ]
    assert seen == ["gpt-x", "claude-x"]
    assert script.unscripted == []
    # An unknown path is still a 404: the fallback answers only the routes.
    assert script.respond("POST", "/v1/embeddings", {}, b"{}").status == 404


def test_each_request_records_when_it_arrived() -> None:
    """`received_at` is the wall-clock arrival time, for counting requests per time window."""
    script = Script().chat(reply("a"))
    before = time.time()
    script.respond("POST", "/chat/completions", {}, CHAT_REQUEST)
    (request,) = script.requests
    assert before <= request.received_at <= time.time()
