"""Per-call request options reach the wire on every client, complete and stream alike."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm.canonical import ToolSpec, UserText
from nisse_llm.errors import RenderError
from nisse_llm.options import RequestOptions
from nisse_llm.routing import Route
from nisse_llm.testing import Script, ScriptedTransport, reply
from tests.clients.harness import MODEL, MODES, ROUTES, Mode, close, complete, make_client
from tests.clients.loopback import SleepLog
from tests.clients.stream_harness import read_stream

CASES = [
    (route, mode, kind) for route in ROUTES for mode in MODES for kind in ("complete", "stream")
]
IDS = ["-".join(case) for case in CASES]
TOOL = ToolSpec(name="submit_review", description="Submit.", parameters={"type": "object"})


async def _send(
    route: Route, mode: Mode, kind: str, options: RequestOptions | None, **client: Any
) -> dict[str, Any]:
    """One call through a client with ``client`` settings; the body the upstream got."""
    script = Script().add(route, reply("Done."))
    target = make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(),
        transport=ScriptedTransport(script), **client,
    )  # fmt: skip
    events = [UserText(text="Review this.")]
    try:
        if kind == "complete":
            await complete(target, events, [TOOL], MODEL[route], options=options)
        else:
            await read_stream(target, events, [TOOL], options=options)
    finally:
        await close(target)
    body: dict[str, Any] = script.requests[0].json
    assert body.get("stream", False) is (kind == "stream")
    return body


@pytest.mark.parametrize(("route", "mode", "kind"), CASES, ids=IDS)
async def test_call_options_win_over_the_client_default(
    route: Route, mode: Mode, kind: str
) -> None:
    """The call's ceiling beats the client's ``max_tokens``; its other options reach the body."""
    options = RequestOptions(
        max_output_tokens=3000, tool_choice="submit_review", parallel_tool_calls=False,
        stop=("END",),
    )  # fmt: skip
    body = await _send(route, mode, kind, options, max_tokens=1234)
    assert body["max_tokens"] == 3000
    if route == "openai_chat":
        assert body["tool_choice"] == {"type": "function", "function": {"name": "submit_review"}}
        assert body["parallel_tool_calls"] is False
        assert body["stop"] == ["END"]
    else:
        assert body["tool_choice"] == {
            "type": "tool", "name": "submit_review", "disable_parallel_tool_use": True,
        }  # fmt: skip
        assert body["stop_sequences"] == ["END"]


@pytest.mark.parametrize(("route", "mode", "kind"), CASES, ids=IDS)
async def test_without_options_the_client_default_holds(
    route: Route, mode: Mode, kind: str
) -> None:
    body = await _send(route, mode, kind, None, max_tokens=1234)
    assert body["max_tokens"] == 1234
    assert "tool_choice" not in body
    assert "thinking" not in body


@pytest.mark.parametrize(("route", "mode"), [(r, m) for r in ROUTES for m in MODES])
async def test_an_invalid_combination_is_refused_before_sending(route: Route, mode: Mode) -> None:
    script = Script()
    target = make_client(
        route, mode, "http://proxy.test", sleep=SleepLog(), transport=ScriptedTransport(script)
    )
    options = RequestOptions(tool_choice="deploy")
    try:
        with pytest.raises(RenderError, match="names no tool"):
            await complete(target, [UserText(text="hi")], [TOOL], MODEL[route], options=options)
        with pytest.raises(RenderError, match="names no tool"):
            target.stream([UserText(text="hi")], [TOOL], MODEL[route], options=options)
    finally:
        await close(target)
    assert script.requests == []
