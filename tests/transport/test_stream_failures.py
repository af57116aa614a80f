"""Every failure rule of stream(), mid-stream and before the first byte, over a real socket."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import (
    BudgetExhausted,
    LLMError,
    StreamInterrupted,
    TruncatedResponse,
    UpstreamUnavailable,
)
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.stream.deltas import StreamDelta, TextDelta
from nisse_llm.stream.deltas import StreamInterrupted as ReExported
from nisse_llm.testing.sse import (
    encode_sse,
    sse_stream,
    stream_events,
    with_error_event,
    without_final_event,
)
from nisse_llm.transport.clients import LiteLLMClient
from tests.stream._support import load_body
from tests.transport.harness import MODEL, MODES, ROUTES, TOKEN, Mode, close, make_client
from tests.transport.loopback import SleepLog, error_body, wait_until
from tests.transport.stream_harness import is_sync, read_stream, upstream
from tests.transport.stream_upstream import Body, Error, Raw, StreamingUpstream

__all__ = ["upstream"]

PLAIN = {"openai_chat": "oai_text_plain", "anthropic_messages": "ant_text_plain"}
TRUNCATED = {"openai_chat": "oai_finish_length", "anthropic_messages": "ant_max_tokens_haiku_probe"}
CASES = [(route, mode) for route in ROUTES for mode in MODES]
CASE_IDS = [f"{route}-{mode}" for route, mode in CASES]
PATHS = {
    "openai_chat": "/chat/completions",
    "anthropic_messages": "/v1/messages",
    "openai_responses": "/v1/responses",
}
FINAL = {
    "openai_chat": "[DONE]",
    "anthropic_messages": "message_stop",
    "openai_responses": "response.completed",
}
#: A recorded Responses reply: a reasoning item with its summary, then a message.
RESPONSES_REPLY = Path(__file__).parent.parent / "fixtures" / "responses"


def _recorded(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((RESPONSES_REPLY / f"{name}.json").read_text())
    return body


def _plain(route: Route) -> dict[str, Any]:
    if route == "openai_responses":
        return _recorded("vercel_reasoning_encrypted_content")
    return load_body(PLAIN[route])


def _truncated(route: Route) -> dict[str, Any]:
    if route == "openai_responses":
        body = _recorded("vercel_reasoning_encrypted_content")
        body["status"] = "incomplete"
        body["incomplete_details"] = {"reason": "max_output_tokens"}
        return body
    return load_body(TRUNCATED[route])


class Recorder:
    """The usage callback and the log records of one client."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.usages: list[tuple[Any, str]] = []
        self._caplog = caplog
        caplog.set_level(logging.INFO, logger="nisse_llm")

    def __call__(self, usage: Any, model: str) -> None:
        self.usages.append((usage, model))

    @property
    def records(self) -> list[logging.LogRecord]:
        """The nisse_llm log records so far."""
        return [r for r in self._caplog.records if r.name == "nisse_llm"]


async def _failed(
    upstream: StreamingUpstream,
    route: Route,
    mode: Mode,
    caplog: pytest.LogCaptureFixture,
    **options: Any,
) -> tuple[BaseException, list[StreamDelta], Any, Recorder]:
    """Stream one reply that must fail: the exception, the deltas before it, the client."""
    recorder = Recorder(caplog)
    client = make_client(
        route, mode, upstream.base_url, sleep=SleepLog(), on_usage=recorder, **options
    )
    seen: list[StreamDelta] = []
    try:
        with pytest.raises(LLMError) as caught:
            await read_stream(client, seen=seen)
    finally:
        await close(client)
    return caught.value, seen, client, recorder


def _assert_failed_once(client: Any, recorder: Recorder, exc: BaseException) -> None:
    assert client.last_usage is None
    assert recorder.usages == []
    (record,) = recorder.records
    assert record.levelno == logging.WARNING
    assert record.error == type(exc).__name__  # type: ignore[attr-defined]


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_connection_cut_mid_stream_is_stream_interrupted_with_the_text_so_far(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A reset after half the stream raises StreamInterrupted (an UpstreamUnavailable), partial text attached."""
    data = sse_stream(route, _plain(route), chunk_size=4)
    # Before the end (a Responses reply reasons at length before its text).
    at = len(data) // 2 if route != "openai_responses" else data.index(b"event: response.completed")
    # Paced, so the client has read what was sent before the reset discards the rest.
    upstream.plan(Raw(data[:at], end="cut", write_size=50, pause_s=0.0005))
    exc, seen, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is StreamInterrupted
    assert isinstance(exc, UpstreamUnavailable)
    assert "connection lost" in exc.message
    path = PATHS[route]
    assert re.match(rf"POST http://127\.0\.0\.1:\d+{path}: ", exc.message)
    texts = [d for d in seen if isinstance(d, TextDelta)]
    assert texts
    assert exc.partial.text == texts[-1].text_so_far
    assert exc.partial.text in _plain_text(route)
    _assert_failed_once(client, recorder, exc)


def _plain_text(route: Route) -> str:
    body = _plain(route)
    if route == "openai_chat":
        return str(body["choices"][0]["message"]["content"])
    if route == "openai_responses":
        return str(body["output"][1]["content"][0]["text"])
    return str(body["content"][0]["text"])


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_stream_that_ends_without_its_final_event_is_stream_interrupted(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A cleanly closed stream missing [DONE] or message_stop is StreamInterrupted, never a success."""
    events = without_final_event(stream_events(route, _plain(route)))
    upstream.plan(Raw(encode_sse(events)))
    exc, _, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is StreamInterrupted
    assert f"the stream ended before {FINAL[route]}" in exc.message
    assert exc.partial.text == _plain_text(route)
    _assert_failed_once(client, recorder, exc)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_an_error_event_mid_stream_is_stream_interrupted_with_the_servers_error(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """An error event raises StreamInterrupted carrying the server's error type and message."""
    events = with_error_event(route, stream_events(route, _plain(route)), after=6)
    upstream.plan(Raw(encode_sse(events)))
    exc, seen, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is StreamInterrupted
    assert (exc.error_type, exc.server_message) == ("overloaded_error", "Overloaded")
    assert exc.status == 200
    assert seen  # deltas before the error were delivered
    _assert_failed_once(client, recorder, exc)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_stall_longer_than_the_idle_timeout_is_stream_interrupted(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A stream silent for longer than stream_idle_timeout_s fails at that timeout, not the route's."""
    data = sse_stream(route, _plain(route))
    upstream.plan(Raw(data[: len(data) // 2], end="stall", stall_s=10.0))
    started = time.monotonic()
    exc, seen, client, recorder = await _failed(
        upstream, route, mode, caplog, stream_idle_timeout_s=0.3, timeout_s=30.0
    )
    assert time.monotonic() - started < 3.0
    assert type(exc) is StreamInterrupted
    assert "no data for 0.3 s" in exc.message
    assert seen
    _assert_failed_once(client, recorder, exc)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_stream_that_keeps_talking_outlives_a_short_idle_timeout(
    upstream: StreamingUpstream, route: Route, mode: Mode
) -> None:
    """The idle timeout bounds silence, not the whole reply: a slow steady stream completes."""
    data = sse_stream(route, _plain(route))
    upstream.plan(Raw(data, write_size=len(data) // 8 + 1, pause_s=0.1))
    client = make_client(
        route, mode, upstream.base_url, sleep=SleepLog(), stream_idle_timeout_s=0.4
    )
    try:
        _, completion = await read_stream(client)
    finally:
        await close(client)
    texts = [event.text for event in completion.events if isinstance(event, AssistantText)]
    assert texts == [_plain_text(route)]


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_truncation_raises_truncated_response_when_the_stream_ends(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A reply cut at the output ceiling streams its deltas, then raises TruncatedResponse."""
    upstream.plan(Body(_truncated(route)))
    exc, seen, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is TruncatedResponse
    assert "output ceiling" in exc.message
    assert any(isinstance(d, TextDelta) for d in seen)
    _assert_failed_once(client, recorder, exc)


def _bad_arguments(route: Route) -> dict[str, Any]:
    if route == "openai_chat":
        body = load_body("oai_tool_call_single")
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": "Par'
        return body
    if route == "openai_responses":
        body = _recorded("vercel_o3_function_call")
        body["output"][1]["arguments"] = '{"query": "mach'
        return body
    body = load_body("ant_tool_use_single")
    for block in body["content"]:
        if block["type"] == "tool_use":
            block["input"] = ["not", "an", "object"]
    return body


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_tool_arguments_that_are_not_a_json_object_are_llm_error(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """Arguments that do not assemble into a JSON object fail the turn as LLMError, not unavailable."""
    upstream.plan(Body(_bad_arguments(route)))
    exc, _, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is LLMError
    assert "arguments" in exc.message
    _assert_failed_once(client, recorder, exc)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_429_before_the_first_byte_is_retried_once_then_streams(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A 429 is retried once after the server's wait, as in complete(); the retry streams."""
    upstream.plan(
        Error(429, error_body("rate limited", code="429"), (("retry-after", "2"),)),
        Body(_plain(route)),
    )
    recorder = Recorder(caplog)
    sleep = SleepLog()
    client = make_client(route, mode, upstream.base_url, sleep=sleep, on_usage=recorder)
    try:
        deltas, completion = await read_stream(client)
    finally:
        await close(client)
    assert sleep.waits == [2.0]
    assert [r.json()["stream"] for r in upstream.requests] == [True, True]
    assert deltas
    assert recorder.usages == [(completion.usage, MODEL[route])]
    (record,) = recorder.records
    assert (record.levelno, record.attempts, record.waited_s) == (logging.INFO, 2, 2.0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_budget_refusal_before_the_first_byte_is_never_retried(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A budget refusal raises BudgetExhausted at once: one request, no wait."""
    refusal = error_body("No deployments available - crossed budget: Exceeded budget", code="429")
    upstream.plan(Error(429, refusal))
    sleep = SleepLog()
    recorder = Recorder(caplog)
    client = make_client(route, mode, upstream.base_url, sleep=sleep, on_usage=recorder)
    try:
        with pytest.raises(BudgetExhausted) as caught:
            await read_stream(client)
    finally:
        await close(client)
    assert (caught.value.status, sleep.waits, len(upstream.requests)) == (429, [], 1)
    _assert_failed_once(client, recorder, caught.value)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_500_before_the_first_byte_is_upstream_unavailable_not_an_interruption(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """A 5xx answered before any stream is UpstreamUnavailable with its status, as in complete()."""
    upstream.plan(Error(500, error_body(f"boom {TOKEN}", code="500")))
    exc, seen, client, recorder = await _failed(upstream, route, mode, caplog)
    assert type(exc) is UpstreamUnavailable
    assert exc.status == 500
    assert TOKEN not in str(exc)
    assert seen == []
    _assert_failed_once(client, recorder, exc)


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_a_plain_json_answer_to_a_stream_request_is_the_same_reply_with_its_deltas(
    upstream: StreamingUpstream, route: Route, mode: Mode
) -> None:
    """A server that ignores "stream": true gives the reply complete() would, and its text delta."""
    upstream.plan(Error(200, json.dumps(_plain(route)).encode()))
    client = make_client(route, mode, upstream.base_url, sleep=SleepLog())
    try:
        deltas, completion = await read_stream(client)
    finally:
        await close(client)
    assert deltas == [TextDelta(_plain_text(route), _plain_text(route))]
    texts = [event.text for event in completion.events if isinstance(event, AssistantText)]
    assert texts == [_plain_text(route)]
    assert client.last_usage == completion.usage


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_leaving_early_closes_the_connection_and_reports_no_usage(
    upstream: StreamingUpstream, route: Route, mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    """Breaking out after one delta closes the response (the server sees it go); no usage, one log."""
    data = sse_stream(route, _plain(route), chunk_size=1)
    upstream.plan(Raw(data, write_size=40, pause_s=0.02), Body(_plain(route)))
    recorder = Recorder(caplog)
    client = make_client(route, mode, upstream.base_url, sleep=SleepLog(), on_usage=recorder)
    args = ([UserText(text="hi")], None, MODEL[route])
    try:
        if is_sync(client):
            with client.stream(*args) as stream:
                for _ in stream:
                    break
        else:
            async with client.stream(*args) as stream:
                async for _ in stream:
                    break
        assert wait_until(lambda: upstream.aborted == 1)
        with pytest.raises(RuntimeError, match="not been read to its end"):
            stream.events  # noqa: B018 - the property access is what is tested
        assert (client.last_usage, recorder.usages) == (None, [])
        (record,) = recorder.records
        assert "closed by the caller after 1 delta" in record.getMessage()
        _, completion = await read_stream(client)  # the client is still usable
    finally:
        await close(client)
    texts = [event.text for event in completion.events if isinstance(event, AssistantText)]
    assert texts == [_plain_text(route)]


def test_the_idle_timeout_comes_from_the_pin(upstream: StreamingUpstream) -> None:
    """A client built from a pin takes its stream_idle_timeout_s."""
    pin = load_settings(
        llm={"base_url": upstream.base_url, "token": TOKEN, "stream_idle_timeout_s": 0.3},
        roles=dict.fromkeys(("executor", "planner", "delegate", "consultant"), "gpt-4o-mini"),
    ).pin()
    data = sse_stream("openai_chat", _plain("openai_chat"))
    upstream.plan(Raw(data[:200], end="stall", stall_s=10.0))
    with LiteLLMClient.from_pin(pin) as client:
        stream = client.stream([UserText(text="hi")], None, "gpt-4o-mini")
        with pytest.raises(StreamInterrupted, match=r"no data for 0\.3 s"), stream:
            list(stream)


def test_stream_interrupted_is_one_class_in_the_error_tree_and_the_streaming_module() -> None:
    """nisse_llm.stream.deltas re-exports the error tree's StreamInterrupted, for older imports."""
    assert ReExported is StreamInterrupted
    assert StreamInterrupted.__mro__[1] is UpstreamUnavailable


@pytest.mark.parametrize(("route", "mode"), CASES, ids=CASE_IDS)
async def test_iterating_a_stream_never_entered_is_a_runtime_error(
    upstream: StreamingUpstream, route: Route, mode: Mode
) -> None:
    """A stream iterated outside its with-block says how to use it, and nothing is sent."""
    client = make_client(route, mode, upstream.base_url, sleep=SleepLog())
    stream = client.stream([UserText(text="hi")], None, MODEL[route])

    async def first() -> object:
        return next(iter(stream)) if is_sync(client) else await anext(aiter(stream))

    try:
        with pytest.raises(RuntimeError, match="sends its request when entered"):
            await first()
    finally:
        await close(client)
    assert upstream.requests == []
