"""A named corpus of canonical conversations, rendered for both routes by the snapshot tests.

Ids are fixed strings so snapshots are stable. Each `Conversation` names the request
model; reasoning events name the model that produced them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)

MODEL = "claude-sonnet-4-5"
OTHER_MODEL = "claude-opus-4-1"

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file from the workspace.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path relative to the root."}},
        "required": ["path"],
    },
)
RUN_TESTS = ToolSpec(
    name="run_tests",
    description="Run the test suite, optionally a subset.",
    parameters={
        "type": "object",
        "properties": {"selector": {"type": "string"}, "verbose": {"type": "boolean"}},
    },
)
EDIT_FILE = ToolSpec(
    name="edit_file",
    description="Apply edits to a file.",
    parameters={
        "type": "object",
        "$defs": {
            "edit": {
                "type": "object",
                "properties": {
                    "old": {"type": "string"},
                    "new": {"type": "string"},
                    "range": {
                        "type": "object",
                        "properties": {
                            "start": {"type": "integer", "minimum": 1},
                            "end": {"type": "integer", "minimum": 1},
                        },
                        "required": ["start", "end"],
                    },
                },
                "required": ["old", "new"],
            }
        },
        "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}, "minItems": 1},
            "mode": {"enum": ["strict", "fuzzy"]},
            "options": {
                "anyOf": [
                    {"type": "null"},
                    {"type": "object", "additionalProperties": {"type": "string"}},
                ]
            },
        },
        "required": ["path", "edits"],
    },
)
TOOLS = [READ_FILE, RUN_TESTS]

THINKING = {
    "type": "thinking",
    "thinking": "The user wants the failing test. Read the test file first.",
    "signature": "EqQBCkgIARABGAIiQL2cSig1Hk2YxWs0hPp0c5u0rKZ8f3Eb0qJ1m4A5QlDxv3+aZcU=",
}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}


@dataclass(frozen=True)
class Conversation:
    """One corpus entry: a log and what the request adds to it."""

    name: str
    events: list[CanonicalEvent]
    tools: list[ToolSpec] = field(default_factory=lambda: list(TOOLS))
    system: str | None = None
    model: str = MODEL


def _call(call_id: str, tool: str = "read_file", **arguments: object) -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments=arguments or {"path": "README.md"})


def _assistant(text: str, model: str = MODEL) -> AssistantText:
    return AssistantText(text=text, model=model)


def long_log(turns: int) -> list[CanonicalEvent]:
    """An agent loop of ``turns`` rounds: user text, assistant text and a call, its result."""
    events: list[CanonicalEvent] = []
    for turn in range(turns):
        events.append(UserText(text=f"Step {turn}: continue with the refactor of module_{turn}."))
        events.append(_assistant(f"Reading module_{turn} before changing it."))
        events.append(_call(f"call_t{turn}", path=f"src/module_{turn}.py"))
        events.append(
            ToolResult(
                call_id=f"call_t{turn}",
                output=f"# module_{turn}\n" + ("def f(x):\n    return x * 2\n" * 40),
            )
        )
    events.append(_assistant("All modules read; the refactor is complete."))
    return events


def corpus() -> list[Conversation]:
    """The named conversations, each rendered for both routes."""
    unicode_text = (
        'Ünïcödé ✓ 日本語 עברית 🚀 "quotes" \\backslash\\ \t tab \u2028 line-sep \x07 bell'
    )
    return [
        Conversation("plain_chat", [UserText(text="Hello! What can you do?")], tools=[]),
        Conversation(
            "system_prompt",
            [UserText(text="Summarise the repository.")],
            system="You are a careful coding agent. Answer briefly.",
        ),
        Conversation(
            "single_tool_call",
            [
                UserText(text="What does README.md say?"),
                _assistant("Let me read it."),
                _call("call_1"),
                ToolResult(call_id="call_1", output="# Project\nA demo."),
                _assistant("It describes a demo project."),
            ],
        ),
        Conversation(
            "parallel_tool_calls",
            [
                UserText(text="Read both files and run the tests."),
                _call("call_a", path="a.py"),
                _call("call_b", path="b.py"),
                _call("call_c", "run_tests", selector="tests/unit"),
                ToolResult(call_id="call_a", output="A = 1"),
                ToolResult(call_id="call_b", output="B = 2"),
                ToolResult(call_id="call_c", output="3 passed"),
                _assistant("Both files are trivial and the tests pass."),
            ],
        ),
        Conversation(
            "results_out_of_order",
            [
                UserText(text="Read both files."),
                _call("call_a", path="a.py"),
                _call("call_b", path="b.py"),
                ToolResult(call_id="call_b", output="B = 2"),
                ToolResult(call_id="call_a", output="A = 1"),
            ],
        ),
        Conversation(
            "tool_error_result",
            [
                UserText(text="Run the tests."),
                _call("call_1", "run_tests"),
                ToolResult(call_id="call_1", output="pytest: command not found", is_error=True),
            ],
        ),
        Conversation(
            "mixed_error_and_success",
            [
                UserText(text="Read a.py and missing.py."),
                _call("call_ok", path="a.py"),
                _call("call_bad", path="missing.py"),
                ToolResult(call_id="call_ok", output="A = 1"),
                ToolResult(call_id="call_bad", output="No such file", is_error=True),
            ],
        ),
        Conversation(
            "user_text_while_tools_run",
            [
                UserText(text="Run the tests."),
                _call("call_1", "run_tests"),
                UserText(text="Also, skip the slow ones."),
                ToolResult(call_id="call_1", output="12 passed"),
            ],
        ),
        Conversation(
            "interrupted_call",
            [
                UserText(text="Read the config."),
                _assistant("Reading it now."),
                _call("call_lost", path="config.toml"),
            ],
        ),
        Conversation(
            "interrupted_then_resumed",
            [
                UserText(text="Read the config."),
                _call("call_lost", path="config.toml"),
                UserText(text="The previous run was interrupted; please continue."),
            ],
        ),
        Conversation(
            "consecutive_user_texts",
            [
                UserText(text="First thought."),
                UserText(text="Second thought."),
                UserText(text="Third thought: what now?"),
            ],
            tools=[],
        ),
        Conversation(
            "empty_and_whitespace_text",
            [
                UserText(text=""),
                UserText(text="   \n\t"),
                UserText(text="The real question."),
                _assistant(""),
                _assistant("  "),
                _assistant("An answer."),
                UserText(text="Thanks."),
            ],
            tools=[],
        ),
        Conversation(
            "reasoning_same_model",
            [
                UserText(text="Why does the test fail?"),
                Reasoning(model=MODEL, response_model=MODEL + "-20250929", block=THINKING),
                _assistant("I will read the test first."),
                _call("call_1", path="tests/test_x.py"),
                ToolResult(call_id="call_1", output="assert add(1, 1) == 3"),
            ],
        ),
        Conversation(
            "reasoning_other_model",
            [
                UserText(text="Why does the test fail?"),
                Reasoning(model=OTHER_MODEL, block=THINKING),
                _assistant("I will read the test first.", OTHER_MODEL),
                _call("call_1", path="tests/test_x.py"),
                ToolResult(call_id="call_1", output="assert add(1, 1) == 3"),
            ],
        ),
        Conversation(
            "redacted_reasoning",
            [
                UserText(text="Plan the change."),
                Reasoning(model=MODEL, block=REDACTED),
                _assistant("Plan: edit one function."),
                UserText(text="Go ahead."),
            ],
        ),
        Conversation(
            "reasoning_only_turn",
            [
                UserText(text="Think, then call a tool."),
                Reasoning(model=MODEL, block=THINKING),
                _call("call_1", path="a.py"),
                ToolResult(call_id="call_1", output="A = 1"),
            ],
        ),
        Conversation(
            "unicode",
            [
                UserText(text=unicode_text),
                _assistant(unicode_text),
                _call("call_u", path="données/📁/ファイル.txt"),
                ToolResult(call_id="call_u", output=unicode_text),
            ],
        ),
        Conversation(
            "large_tool_output",
            [
                UserText(text="Dump the log."),
                _call("call_big", path="build.log"),
                ToolResult(
                    call_id="call_big", output="".join(f"line {i}: ok\n" for i in range(20000))
                ),
            ],
        ),
        Conversation(
            "nested_tool_schemas",
            [
                UserText(text="Fix the typo in a.py."),
                _call(
                    "call_edit",
                    "edit_file",
                    path="a.py",
                    edits=[{"old": "teh", "new": "the", "range": {"start": 3, "end": 3}}],
                    options=None,
                ),
                ToolResult(call_id="call_edit", output="1 edit applied"),
            ],
            tools=[READ_FILE, RUN_TESTS, EDIT_FILE],
        ),
        Conversation(
            "empty_arguments",
            [
                UserText(text="Run everything."),
                ToolCall(call_id="call_e", tool="run_tests", arguments={}),
                ToolResult(call_id="call_e", output="40 passed"),
            ],
        ),
        Conversation(
            "text_after_call_same_turn",
            [
                UserText(text="Read a.py."),
                _call("call_1", path="a.py"),
                _assistant("Waiting for the file."),
                ToolResult(call_id="call_1", output="A = 1"),
            ],
        ),
        Conversation(
            "assistant_first",
            [_assistant("I have resumed this task."), UserText(text="Good, continue.")],
            tools=[],
        ),
        Conversation(
            "tools_in_log_none_passed",
            [
                UserText(text="Read a.py."),
                _call("call_1", path="a.py"),
                ToolResult(call_id="call_1", output="A = 1"),
                _assistant("Done."),
                UserText(text="Now just talk, no tools."),
            ],
            tools=[],
        ),
        Conversation(
            "multi_round_agent_loop",
            [
                UserText(text="Make the tests pass."),
                _assistant("Running the tests."),
                _call("call_r1", "run_tests"),
                ToolResult(call_id="call_r1", output="1 failed: test_add"),
                _assistant("Reading the failing test."),
                _call("call_r2", path="tests/test_add.py"),
                ToolResult(call_id="call_r2", output="assert add(2, 2) == 4"),
                _call("call_r3", "edit_file", path="src/add.py", edits=[{"old": "-", "new": "+"}]),
                ToolResult(call_id="call_r3", output="1 edit applied"),
                _call("call_r4", "run_tests", verbose=True),
                ToolResult(call_id="call_r4", output="all passed"),
                _assistant("Fixed: `add` subtracted."),
                UserText(text="Thanks!"),
            ],
            tools=[READ_FILE, RUN_TESTS, EDIT_FILE],
            system="You are a careful coding agent.",
        ),
        Conversation(
            "json_in_text",
            [
                UserText(text=json.dumps({"task": "parse", "nested": {"a": [1, 2, {"b": None}]}})),
                _assistant('{"answer": "a JSON-looking reply"}'),
            ],
            tools=[],
        ),
        Conversation("long_200_turns", long_log(200)),
    ]


CORPUS = {conversation.name: conversation for conversation in corpus()}
