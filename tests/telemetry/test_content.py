"""Message content reaches telemetry only when asked, in the conventions' shapes, never the token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import nisse_llm
from nisse_llm import (
    AssistantText,
    CanonicalEvent,
    Image,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserImage,
    UserText,
)
from nisse_llm.telemetry import CAPTURE_CONTENT_ENV
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.images import png
from tests.telemetry.conftest import Telemetry, _setup, attributes
from tests.telemetry.helpers import BASE, CALLERS, TOKEN, Caller, caller_id

SYSTEM = "You are a careful agent. SYSTEM-MARKER"
TOOL = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
IMAGE = Image.from_bytes(png(8, 6, seed=3))


def _log() -> list[CanonicalEvent]:
    return [
        UserText(text="Why does it fail? QUESTION-MARKER"),
        UserImage(image=IMAGE),
        AssistantText(text="Let me look.", model="m"),
        ToolCall(call_id="call_a", tool="read_file", arguments={"path": "a.py"}),
        ToolResult(call_id="call_a", output="def add(): ... RESULT-MARKER", images=(IMAGE,)),
    ]


def _values(telemetry: Telemetry) -> str:
    """Every attribute value of every span, as one text to search."""
    return json.dumps([attributes(span) for span in telemetry.spans()], default=str)


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_content_is_off_by_default(otel: Telemetry, caller: Caller) -> None:
    """Without capture no message text, system prompt or tool definition is recorded."""
    script = Script().add(caller.route, reply("ANSWER-MARKER"))
    await caller.complete(script, _log(), tools=[TOOL], system=SYSTEM)
    text = _values(otel)
    for marker in ("QUESTION-MARKER", "RESULT-MARKER", "SYSTEM-MARKER", "ANSWER-MARKER", "add()"):
        assert marker not in text
    assert "gen_ai.input.messages" not in text
    assert "gen_ai.tool.definitions" not in text
    assert TOKEN not in text


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_captured_content_follows_the_conventions_shapes(
    otel_content: Telemetry, caller: Caller
) -> None:
    """With capture on, inputs, outputs, system prompt and tools are the conventions' JSON,
    each image replaced by its size and media type."""
    script = Script().add(caller.route, reply("Found it.", ToolUse("read_file", {"path": "b.py"})))
    events = await caller.complete(script, _log(), tools=[TOOL], system=SYSTEM)
    seen = attributes(otel_content.span())
    blob = {"type": "blob", "modality": "image", "size": IMAGE.size, "mime_type": "image/png"}
    assert json.loads(seen["gen_ai.input.messages"]) == [
        {
            "role": "user",
            "parts": [{"type": "text", "content": "Why does it fail? QUESTION-MARKER"}, blob],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Let me look."},
                {
                    "type": "tool_call",
                    "id": "call_a",
                    "name": "read_file",
                    "arguments": {"path": "a.py"},
                },
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "call_a",
                    "response": "def add(): ... RESULT-MARKER",
                },
                blob,
            ],
        },
    ]
    call = events[-1]
    assert isinstance(call, ToolCall)
    assert json.loads(seen["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Found it."},
                {
                    "type": "tool_call",
                    "id": call.call_id,
                    "name": "read_file",
                    "arguments": {"path": "b.py"},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert json.loads(seen["gen_ai.system_instructions"]) == [{"type": "text", "content": SYSTEM}]
    assert json.loads(seen["gen_ai.tool.definitions"]) == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file.",
            "parameters": TOOL.parameters,
        }
    ]
    assert IMAGE.data is not None
    assert IMAGE.data[:40] not in _values(otel_content)  # no image bytes, even in part


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """Instrumented with capture_content left False, and the conventions' variable set."""
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    yield from _setup(capture_content=False)


async def test_the_conventions_variable_turns_capture_on(otel_env: Telemetry) -> None:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true captures content."""
    script = Script().chat(reply("ok"))
    await Caller("openai_chat", False).complete(script, [UserText(text="QUESTION-MARKER")])
    assert "QUESTION-MARKER" in attributes(otel_env.span())["gen_ai.input.messages"]


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_captured_content_never_shows_the_token(
    otel_content: Telemetry, caller: Caller
) -> None:
    """A token a log, a tool result or the reply quotes is redacted from captured content."""
    script = Script().add(caller.route, reply(f"The key is {TOKEN}."))
    log: list[CanonicalEvent] = [
        UserText(text=f"my token is {TOKEN}"),
        ToolCall(call_id="call_t", tool="read_file", arguments={"path": TOKEN}),
        ToolResult(call_id="call_t", output=f"NISSE_LLM_TOKEN={TOKEN}"),
    ]
    await caller.complete(script, log, tools=[TOOL], system=f"token {TOKEN}")
    text = _values(otel_content)
    assert TOKEN not in text
    assert text.count("[redacted]") >= 5


async def test_tool_spans_capture_arguments_and_results_only_when_asked(
    otel_content: Telemetry,
) -> None:
    """A tool span records its arguments and result under capture, redacting the token of
    any client made in the process."""
    nisse_llm.LiteLLMClient(BASE, TOKEN).close()

    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path} {TOKEN}"

    results = nisse_llm.Toolbox([read_file]).run(
        [ToolCall(call_id="call_r", tool="read_file", arguments={"path": "a.py"})]
    )
    assert TOKEN in results[0].output  # the agent gets the real output
    seen: dict[str, Any] = attributes(otel_content.span())
    assert json.loads(seen["gen_ai.tool.call.arguments"]) == {"path": "a.py"}
    assert seen["gen_ai.tool.call.result"] == "contents of a.py [redacted]"
