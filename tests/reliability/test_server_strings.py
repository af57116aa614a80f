"""Server strings kept in bounds: tool names, model names, error types and messages, token
counts, and what reaches a terminal.

A streamed tool name is checked as the final parse checks it before it is yielded; a
reply's model name, an error's type and message are clipped; token counts must be JSON
integers from 0 to 10^12 (negative, absurd, boolean or string counts are a parse error,
never metered); the CLI prints a server's ESC/OSC sequences as visible escapes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.cli._terminal import printable
from nisse_llm.cli.main import main
from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import Usage
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.stream.deltas import StreamDelta, ToolCallStarted
from nisse_llm.testing.sse import encode_sse, sse_stream, stream_events
from tests.transport.harness import EVENTS, MODEL, MODES, TOKEN, Mode, close, complete, make_client
from tests.transport.loopback import RESPONSES, LoopbackServer, Reply, SleepLog, error_body, serve
from tests.transport.stream_harness import read_stream
from tests.transport.stream_upstream import Raw, StreamingUpstream
from tests.transport.stream_upstream import serve as serve_streaming

TOOL_BODY = {
    "openai_chat": "oai_tool_call_single.json",
    "anthropic_messages": "ant_tool_use_single.json",
}
TEXT_BODY = {"openai_chat": "oai_text_plain.json", "anthropic_messages": "ant_text_plain.json"}
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m"


@pytest.fixture
def streaming() -> Iterator[StreamingUpstream]:
    """A loopback upstream that streams the bytes it is given."""
    yield from serve_streaming()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback proxy stand-in answering from a plan."""
    yield from serve()


def _body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((RESPONSES / name).read_text())
    return body


def _with_tool_name(route: Route, name: str) -> dict[str, Any]:
    body = copy.deepcopy(_body(TOOL_BODY[route]))
    if route == "openai_chat":
        body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = name
    else:
        next(b for b in body["content"] if b["type"] == "tool_use")["name"] = name
    return body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
@pytest.mark.parametrize("name", ["rm -rf /", "x" * 65, ESCAPES, ""])
async def test_a_streamed_tool_name_is_checked_before_it_is_yielded(
    name: str, route: Route, mode: Mode, streaming: StreamingUpstream
) -> None:
    """A tool name the final parse would refuse is refused mid-stream with the same words,
    and no ToolCallStarted carrying it ever reaches the caller."""
    body = _with_tool_name(route, name)
    streaming.plan(Raw(sse_stream(route, body)))
    client = make_client(route, mode, streaming.base_url, sleep=SleepLog())
    seen: list[StreamDelta] = []
    try:
        with pytest.raises(LLMError, match="names no valid tool") as caught:
            await read_stream(client, seen=seen)
    finally:
        await close(client)
    assert not [d for d in seen if isinstance(d, ToolCallStarted)]
    assert "\x1b" not in str(caught.value)


def _usage_body(route: Route, value: Any) -> bytes:
    body = _body(TEXT_BODY[route])
    key = "prompt_tokens" if route == "openai_chat" else "input_tokens"
    body["usage"][key] = value
    return json.dumps(body).encode()


ABSURD = [-1, 10**12 + 1, 10**30, True, "5", 1.5]


@pytest.mark.parametrize("value", ABSURD, ids=repr)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
def test_an_absurd_token_count_is_a_parse_error(route: Route, value: Any) -> None:
    """Negative, above 10^12, boolean, string or fractional counts: LLMError, no usage."""
    renderer = OpenAIChatRenderer() if route == "openai_chat" else AnthropicMessagesRenderer()
    with pytest.raises(LLMError):
        renderer.parse(_usage_body(route, value), requested_model=MODEL[route])


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
def test_a_token_count_of_10_to_the_12_is_metered(route: Route) -> None:
    """The largest accepted count still parses, so the bound refuses only the absurd."""
    renderer = OpenAIChatRenderer() if route == "openai_chat" else AnthropicMessagesRenderer()
    completion = renderer.parse(_usage_body(route, 10**12), requested_model=MODEL[route])
    assert completion.usage.input >= 10**12


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
async def test_an_absurd_streamed_token_count_is_never_metered(
    route: Route, mode: Mode, streaming: StreamingUpstream
) -> None:
    """A stream whose usage is absurd ends in LLMError and on_usage is never called."""
    metered: list[Usage] = []
    streaming.plan(Raw(sse_stream(route, json.loads(_usage_body(route, -5)))))
    client = make_client(
        route, mode, streaming.base_url, sleep=SleepLog(), on_usage=lambda u, m: metered.append(u)
    )
    try:
        with pytest.raises(LLMError):
            await read_stream(client)
    finally:
        await close(client)
    assert metered == []


@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
def test_a_reply_model_name_is_clipped(route: Route) -> None:
    """A 100,000-character model name in a reply is kept to its first 256 characters."""
    body = _body(TEXT_BODY[route])
    body["model"] = "m" * 100_000
    renderer = OpenAIChatRenderer() if route == "openai_chat" else AnthropicMessagesRenderer()
    completion = renderer.parse(json.dumps(body).encode(), requested_model=MODEL[route])
    assert completion.response_model == "m" * 256


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
async def test_error_type_and_message_are_clipped(
    route: Route, mode: Mode, server: LoopbackServer
) -> None:
    """A 400 whose error type and message are 30 KB each (the body within the 64 KiB read
    of an error): the error keeps 120 characters of the type and an excerpt of the message."""
    server.plan(Reply(400, error_body("y" * 30_000, type_="t" * 30_000)))
    client = make_client(route, mode, server.base_url, sleep=SleepLog())
    try:
        with pytest.raises(LLMError) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    assert caught.value.error_type == "t" * 120
    assert len(caught.value.server_message or "") <= 4000
    assert len(str(caught.value)) <= 2000


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["openai_chat", "anthropic_messages"])
async def test_a_streamed_error_type_is_clipped(
    route: Route, mode: Mode, streaming: StreamingUpstream
) -> None:
    """An error event with a 100 KB type: the StreamInterrupted keeps 120 characters of it."""
    events = stream_events(route, _body(TEXT_BODY[route]))
    error = {"type": "error", "error": {"type": "t" * 100_000, "message": "overloaded"}}
    data = encode_sse(events[:3]) + f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    streaming.plan(Raw(data))
    client = make_client(route, mode, streaming.base_url, sleep=SleepLog())
    try:
        with pytest.raises(LLMError) as caught:
            await read_stream(client)
    finally:
        await close(client)
    assert caught.value.error_type == "t" * 120


def test_printable_escapes_every_control_character_but_newline_and_tab() -> None:
    """C0, DEL and C1 (CSI as U+009B) become visible escapes; text, newlines, tabs stay."""
    assert printable(f"ok\n\tthen{ESCAPES}é") == "ok\n\tthen\\x1b]0;owned\\x07\\x1b[2J\\x9b31mé"


def _config(tmp_path: Path, base_url: str) -> list[str]:
    roles = '[roles]\nexecutor = "claude-sonnet-4-5"\nplanner = "gpt-4o-mini"\ndelegate = "d"\nconsultant = "c"\n'
    path = tmp_path / "c.toml"
    path.write_text(f'[llm]\nbase_url = "{base_url}"\ntoken = "{TOKEN}"\n' + roles)
    path.chmod(0o600)
    return ["--config", str(path)]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("role", ["executor", "planner"])
def test_the_cli_prints_a_servers_escape_sequences_as_visible_text(
    role: str,
    stream: bool,
    tmp_path: Path,
    server: LoopbackServer,
    streaming: StreamingUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Reply text, tool arguments and error bodies holding ESC/OSC/CSI reach the terminal
    escaped: no raw control character is printed."""
    route: Route = "anthropic_messages" if role == "executor" else "openai_chat"
    body = _body(TEXT_BODY[route])
    if route == "openai_chat":
        body["choices"][0]["message"]["content"] = f"hello {ESCAPES}"
    else:
        body["content"][0]["text"] = f"hello {ESCAPES}"
    flag = ["--stream"] if stream else []
    if stream:
        streaming.plan(Raw(sse_stream(route, body)))
        argv = ["complete", "--role", role, *flag, *_config(tmp_path, streaming.base_url), "hi"]
    else:
        server.plan(Reply(200, json.dumps(body).encode()))
        argv = ["complete", "--role", role, *_config(tmp_path, server.base_url), "hi"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "hello \\x1b]0;owned\\x07" in out
    # Raw control bytes: not JSON, so the error quotes the body text as it came.
    server.plan(Reply(400, f"bad {ESCAPES}".encode(), content_type="text/plain"))
    assert main(["complete", "--role", role, *_config(tmp_path, server.base_url), "hi"]) != 0
    out2, err2 = capsys.readouterr()
    for text in (out, err, out2, err2):
        assert not any(ch in text for ch in "\x1b\x07\x9b")
    assert "\\x1b" in err2
