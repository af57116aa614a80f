"""Replays of real LiteLLM proxy transcripts of cut replies (tests/fixtures/proxy_cuts).

Recorded by tests/stream/record_proxy_cuts.py: the real proxy (1.108.7) in front of
the scripted upstream, which streams long text, long tool arguments or long thinking
either whole (the control), ``ended`` (the body ends early but cleanly: the proxy sees
no error) or ``broken`` (the body stops short of its content-length). Each is fed to
the route's accumulator, then through a client, sync and async.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from nisse_llm.errors import LLMError, StreamInterrupted
from nisse_llm.events.canonical import AssistantText, Completion, Reasoning, ToolCall, UserText
from nisse_llm.stream.deltas import StreamDelta, TextDelta
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from tests.stream._support import accumulator
from tests.stream.record_proxy_cuts import BODY_TEXT, CASES, LONG_TEXT, LONG_THINKING, Case

FIXTURES = Path(__file__).parent.parent / "fixtures" / "proxy_cuts"
ARGS_CONTENT = BODY_TEXT
LOG = [UserText(text="Write the plan to notes/plan.txt.")]


def load(case: Case) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads((FIXTURES / f"{case.name}.json").read_text("utf-8"))
    assert fixture["status"] == 200
    assert fixture["transport_error"] is None
    return fixture


def replay(case: Case) -> Completion:
    fixture = load(case)
    acc = accumulator("openai_chat" if case.route == "chat" else "anthropic_messages")
    acc.feed(fixture["body"].encode())
    return acc.finish()


def _interrupted_by(case: Case) -> str | None:
    """What the stream shows of a cut: the reason StreamInterrupted must give, or None."""
    if case.cut == "whole":
        return None
    if case.cut == "broken":
        return "the server sent an error"  # the proxy saw the upstream fail and says so
    if case.route == "messages" and case.family == "claude":
        return "ended before message_stop"  # relayed byte for byte: the end never came
    if "tool" in case.kind:
        return "arguments stop mid-JSON"
    if case.kind == "thinking" and case.family == "claude":
        return "a thinking block came without its signature"
    # A cut in plain text, or in OpenAI-style reasoning, looks exactly like a short reply.
    return None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_recorded_reply_is_interrupted_exactly_when_it_shows_a_cut(case: Case) -> None:
    """Every cut the transcript shows raises StreamInterrupted; every control is a finished turn."""
    expected = _interrupted_by(case)
    if expected is None:
        completion = replay(case)
        assert completion.stop_reason in ("stop", "end_turn", "tool_calls", "tool_use")
        return
    with pytest.raises(StreamInterrupted, match=expected) as caught:
        replay(case)
    partial = caught.value.partial
    assert partial.events > 0
    if "tool" in case.kind and case.cut == "ended":
        # The work so far is kept: the arguments are the start of the real ones.
        (call,) = partial.tool_calls
        assert call.tool == "write_file"
        assert len(call.arguments) > 100
        so_far = json.loads(call.arguments + '"}')
        assert so_far["path"] == "notes/plan.txt"
        assert ARGS_CONTENT.startswith(so_far["content"])
    if case.kind == "thinking" and case.cut == "ended":
        assert partial.reasoning
        assert LONG_THINKING.thinking.startswith(partial.reasoning)


WHOLE = [c for c in CASES if c.cut == "whole"]


@pytest.mark.parametrize("case", WHOLE, ids=[c.name for c in WHOLE])
def test_the_controls_come_out_whole(case: Case) -> None:
    """The uncut replies carry the whole text, arguments and reasoning."""
    events = replay(case).events
    texts = [e.text for e in events if isinstance(e, AssistantText)]
    calls = [e for e in events if isinstance(e, ToolCall)]
    reasoning = [e for e in events if isinstance(e, Reasoning)]
    if case.kind == "text":
        assert texts == [LONG_TEXT]
    if "tool" in case.kind:
        assert [c.arguments for c in calls] == [{"path": "notes/plan.txt", "content": BODY_TEXT}]
    if case.kind == "thinking":
        assert texts == ["Done."]
        (block,) = [r.block for r in reasoning]
        text = block.get("thinking", block.get("reasoning_content"))
        assert text == LONG_THINKING.thinking
        # An OpenAI upstream's reasoning relayed to /v1/messages has an empty signature in a
        # finished reply: the reason an unsigned thinking block there is not taken as a cut.
        if case.route == "messages" and case.family == "gpt":
            assert not block.get("signature")


UNDETECTABLE = [c for c in CASES if c.cut == "ended" and _interrupted_by(c) is None]


@pytest.mark.parametrize("case", UNDETECTABLE, ids=[c.name for c in UNDETECTABLE])
def test_a_cut_the_proxy_dresses_in_plain_text_or_reasoning_cannot_be_told(case: Case) -> None:
    """The limit, pinned: the proxy's invented ending makes these cuts look like short replies."""
    events = replay(case).events
    if case.kind == "text":
        (text,) = [e.text for e in events if isinstance(e, AssistantText)]
        assert LONG_TEXT.startswith(text)
        assert len(text) < len(LONG_TEXT)
    else:
        assert [type(e) for e in events] == [Reasoning]


CLIENT_CASES = [c for c in CASES if c.cut == "ended" and _interrupted_by(c) is not None]


def _transport(fixture: dict[str, Any]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": fixture["content_type"]},
            content=fixture["body"].encode(),
        )

    return httpx.MockTransport(answer)


@pytest.mark.parametrize("case", CLIENT_CASES, ids=[c.name for c in CLIENT_CASES])
def test_clients_raise_stream_interrupted_after_yielding_what_arrived(case: Case) -> None:
    """Through stream(), sync and async: the deltas arrive, then StreamInterrupted, no usage."""
    fixture = load(case)
    expected = _interrupted_by(case)
    assert expected is not None
    sync_cls = LiteLLMClient if case.route == "chat" else AnthropicPassthroughClient
    seen: list[StreamDelta] = []
    with sync_cls("http://proxy.test", "sk-test", transport=_transport(fixture)) as client:
        stream = client.stream(LOG, None, "m")
        with pytest.raises(StreamInterrupted, match=expected) as caught, stream:
            seen.extend(stream)
        assert client.last_usage is None
    assert seen
    text = "".join(d.text for d in seen if isinstance(d, TextDelta))
    assert caught.value.partial.text == text

    async def run() -> list[StreamDelta]:
        async_cls = AsyncLiteLLMClient if case.route == "chat" else AsyncAnthropicPassthroughClient
        got: list[StreamDelta] = []
        async with async_cls("http://proxy.test", "sk-test", transport=_transport(fixture)) as c:

            async def drain() -> None:
                async with c.stream(LOG, None, "m") as stream:
                    async for delta in stream:
                        got.append(delta)

            with pytest.raises(StreamInterrupted, match=expected):
                await drain()
        return got

    assert asyncio.run(run()) == seen


# --- every rule beside its control, on hand-written streams --------------------------------


def _sse(*events: dict[str, Any] | str) -> bytes:
    return b"".join(
        f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events
    )


def _chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def _chat_call(arguments: str, finish: str) -> bytes:
    return _sse(
        _chunk({"role": "assistant"}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
        _chunk({}, finish),
        "[DONE]",
    )


def _chat_finish(data: bytes) -> Completion:
    acc = accumulator("openai_chat")
    acc.feed(data)
    return acc.finish()


@pytest.mark.parametrize(
    ("arguments", "finish", "outcome"),
    [
        ('{"path": "a.txt", "content": "li', "stop", StreamInterrupted),
        ('{"path": "a.txt", "content": "li', None, StreamInterrupted),  # no finish at all
        ('{"path": "a.txt"', "end_turn", StreamInterrupted),
        # Controls: the tool-call finish says the model ended there (a bad reply, not a cut)...
        ('{"path": "a.txt", "content": "li', "tool_calls", "non-JSON arguments"),
        # ... arguments wrong in another way are no cut ...
        ('{"path": "a.txt"}{"path": "b.txt"}', "stop", "non-JSON arguments"),
        ('"a.txt"', "stop", "were str, expected an object"),
        # ... the ceiling is a truncation ...
        ('{"path": "a.txt", "content": "li', "length", "TruncatedResponse"),
        # ... and whole arguments under "stop" are a finished call.
        ('{"path": "a.txt", "content": "x"}', "stop", None),
    ],
)
def test_chat_route_unterminated_arguments_rule(
    arguments: str, finish: str | None, outcome: object
) -> None:
    """Arguments that stop mid-JSON under a finish other than tool_calls/length are a cut."""
    data = _chat_call(arguments, finish or "")
    if finish is None:
        data = data.replace(b', "finish_reason": ""', b', "finish_reason": null')
    if outcome is StreamInterrupted:
        if finish is None:
            with pytest.raises(StreamInterrupted, match="without a finish_reason"):
                _chat_finish(data)
            return
        with pytest.raises(StreamInterrupted, match="arguments stop mid-JSON") as caught:
            _chat_finish(data)
        assert caught.value.partial.tool_calls[0].arguments == arguments
    elif outcome is None:
        (call,) = _chat_finish(data).events
        assert isinstance(call, ToolCall)
    else:
        with pytest.raises(LLMError) as raised:
            _chat_finish(data)
        assert not isinstance(raised.value, StreamInterrupted)
        assert str(outcome) in f"{type(raised.value).__name__}: {raised.value}"


def _thinking(*blocks: dict[str, Any]) -> bytes:
    return _sse(
        _chunk(
            {"role": "assistant", "reasoning_content": "Think.", "thinking_blocks": list(blocks)}
        ),
        _chunk({"content": "Done."}),
        _chunk({}, "stop"),
        "[DONE]",
    )


@pytest.mark.parametrize(
    ("blocks", "cut"),
    [
        ([{"type": "thinking", "thinking": "Think.", "index": 0}], True),
        ([{"type": "thinking", "thinking": "Think.", "signature": "", "index": 0}], True),
        ([{"type": "thinking", "thinking": "Think.", "signature": "c2ln", "index": 0}], False),
        # Redacted thinking carries its data instead of a signature.
        ([{"type": "redacted_thinking", "data": "ZGF0YQ==", "index": 0}], False),
        # OpenAI-style reasoning alone (no thinking_blocks) has no signature to miss.
        ([], False),
    ],
)
def test_chat_route_unsigned_thinking_rule(blocks: list[dict[str, Any]], cut: bool) -> None:
    """An Anthropic thinking block relayed without its signature is a cut; the others finish."""
    data = _thinking(*blocks)
    if cut:
        with pytest.raises(StreamInterrupted, match="without its signature") as caught:
            _chat_finish(data)
        assert caught.value.partial.reasoning == "Think."
        return
    events = _chat_finish(data).events
    assert isinstance(events[0], Reasoning)
    assert isinstance(events[-1], AssistantText)
    assert events[-1].text == "Done."


def _messages_call(arguments: str, stop: str) -> bytes:
    return _sse(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "m",
                "stop_reason": None,
                "usage": {"input_tokens": 5, "output_tokens": 0},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "write_file",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": arguments},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )


@pytest.mark.parametrize(
    ("arguments", "stop", "outcome"),
    [
        ('{"path": "a.txt", "content": "li', "end_turn", StreamInterrupted),
        ('{"path": ', "stop_sequence", StreamInterrupted),
        ('{"path": "a.txt", "content": "li', "tool_use", "not JSON"),
        ('{"path": "a.txt"}{"path": "b.txt"}', "end_turn", "not JSON"),
        ('{"path": "a.txt", "content": "li', "max_tokens", "TruncatedResponse"),
        ('{"path": "a.txt", "content": "x"}', "end_turn", None),
    ],
)
def test_messages_route_unterminated_arguments_rule(
    arguments: str, stop: str, outcome: object
) -> None:
    """The same rule on /v1/messages, where LiteLLM invents end_turn for an OpenAI upstream."""
    acc = accumulator("anthropic_messages")
    acc.feed(_messages_call(arguments, stop))
    if outcome is StreamInterrupted:
        with pytest.raises(StreamInterrupted, match="arguments stop mid-JSON") as caught:
            acc.finish()
        assert caught.value.partial.tool_calls[0].arguments == arguments
    elif outcome is None:
        (call,) = acc.finish().events
        assert isinstance(call, ToolCall)
    else:
        with pytest.raises(LLMError) as raised:
            acc.finish()
        assert not isinstance(raised.value, StreamInterrupted)
        assert str(outcome) in f"{type(raised.value).__name__}: {raised.value}"


def test_a_missing_finish_on_a_later_choice_is_no_interruption() -> None:
    """LiteLLM drops finish_reason for choices after the first; only choice 0 is the reply."""
    data = _sse(
        _chunk({"role": "assistant", "content": "One."}),
        _chunk({"role": "assistant", "content": "Two."}, index=1),
        _chunk({}, "stop"),
        "[DONE]",
    )
    assert [e.text for e in _chat_finish(data).events if isinstance(e, AssistantText)] == ["One."]
    no_first = _sse(_chunk({"content": "Two."}, "stop", index=1), "[DONE]")
    with pytest.raises(StreamInterrupted, match="without a finish_reason for choice 0"):
        _chat_finish(no_first)
