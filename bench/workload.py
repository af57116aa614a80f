"""A deterministic coding-agent history, as a nisse_llm log and in each peer's input format.

Each turn: a user message, assistant text with one or two tool calls (JSON arguments),
and a 1-2 KB result per call; ten tool definitions with JSON schemas; a system prompt.
Turn ``i`` depends only on the seed and ``i``, so a log can grow one turn at a time.
About 2.6 KB and 3.3 chat messages per turn, like the history DESIGN.md measured.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MODEL_CHAT = "bench-model"
MODEL_MESSAGES = "claude-bench"
MAX_TOKENS = 16384

SYSTEM = (
    "You are a careful software engineer working in a Python repository. "
    "Use the tools to read, edit and test code; never guess file contents. "
    "Keep changes small, run the relevant tests after each edit, and explain "
    "failures before fixing them. Paths are relative to the repository root. "
) * 6

_WORDS = [
    "cache",
    "key",
    "config",
    "parser",
    "request",
    "response",
    "token",
    "retry",
    "budget",
    "handler",
    "module",
    "fixture",
    "snapshot",
    "render",
    "encode",
    "decode",
    "stream",
    "buffer",
    "schema",
    "model",
    "route",
    "proxy",
    "timeout",
    "session",
    "record",
    "event",
    "adapter",
    "client",
    "server",
    "worker",
    "queue",
    "index",
    "field",
]

_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "read_file",
        "Read a file from the workspace, optionally a line range.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the root."},
                "start": {"type": "integer", "minimum": 1},
                "end": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    ),
    (
        "write_file",
        "Create or overwrite a file with the given content.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    (
        "edit_file",
        "Apply exact-match edits to a file.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "old": {"type": "string"},
                            "new": {"type": "string"},
                        },
                        "required": ["old", "new"],
                    },
                },
            },
            "required": ["path", "edits"],
        },
    ),
    (
        "run_tests",
        "Run the test suite or a subset of it.",
        {
            "type": "object",
            "properties": {
                "selector": {
                    "type": "string",
                    "description": "pytest node id or path.",
                },
                "verbose": {"type": "boolean"},
            },
        },
    ),
    (
        "run_shell",
        "Run a shell command in the workspace with a timeout.",
        {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 1, "maximum": 600},
            },
            "required": ["command"],
        },
    ),
    (
        "search_code",
        "Search the repository for a regular expression.",
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "glob": {"type": "string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 500},
            },
            "required": ["pattern"],
        },
    ),
    (
        "list_dir",
        "List a directory.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "recursive": {"type": "boolean"},
            },
            "required": ["path"],
        },
    ),
    (
        "git_diff",
        "Show the working tree diff, optionally for some paths.",
        {
            "type": "object",
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
        },
    ),
    (
        "git_commit",
        "Commit staged changes with a message.",
        {
            "type": "object",
            "properties": {
                "message": {"type": "string", "minLength": 1},
                "paths": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["message"],
        },
    ),
    (
        "web_fetch",
        "Fetch a documentation page as text.",
        {
            "type": "object",
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "max_chars": {"type": "integer", "minimum": 100},
            },
            "required": ["url"],
        },
    ),
]


@dataclass(frozen=True)
class Call:
    """One tool call of a turn and its result."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    output: str


@dataclass(frozen=True)
class Turn:
    """One agent turn, in plain data."""

    user: str
    assistant: str
    calls: tuple[Call, ...]


def _phrase(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _output(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        line = rng.choice(
            (
                f"def {a}_{b}(self, {a}: str) -> dict[str, int]:",
                f'    return {{"{a}": self.{b}[{rng.randint(0, 99)}]}}  # {_phrase(rng, 4)}',
                f"tests/test_{a}.py::test_{b}_{rng.randint(1, 40)} PASSED",
                f'E   AssertionError: expected "{a}" got "{b}\\n"',
                f"{rng.randint(1, 400):>4}\t    {a} = {b}.get('{a}', None)",
            )
        )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def make_turn(seed: int, index: int) -> Turn:
    """Turn ``index`` of the history for ``seed``."""
    rng = random.Random(seed * 1_000_003 + index)
    calls = []
    for n in range(1 if rng.random() < 0.75 else 2):
        tool, _, _ = rng.choice(_TOOLS)
        path = f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"
        arguments: dict[str, Any] = {"path": path, "start": rng.randint(1, 200)}
        if tool == "edit_file":
            arguments = {
                "path": path,
                "edits": [{"old": _phrase(rng, 6), "new": _phrase(rng, 7)}],
            }
        elif tool in ("run_tests", "run_shell", "search_code"):
            arguments = {
                "selector": f"tests/test_{rng.choice(_WORDS)}.py",
                "verbose": True,
            }
        calls.append(
            Call(
                call_id=f"call_t{index:05d}n{n}",
                tool=tool,
                arguments=arguments,
                output=_output(rng, rng.randint(1024, 1900)),
            )
        )
    return Turn(
        user=f"Turn {index}: {_phrase(rng, rng.randint(15, 40))}.",
        assistant=f"Looking at the {_phrase(rng, rng.randint(10, 30))}; checking it now.",
        calls=tuple(calls),
    )


def openai_tools() -> list[dict[str, Any]]:
    """The tool definitions as the openai SDK and LiteLLM take them."""
    return [
        {"type": "function", "function": {"name": n, "description": d, "parameters": p}}
        for n, d, p in _TOOLS
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """The tool definitions as the anthropic SDK takes them."""
    return [{"name": n, "description": d, "input_schema": p} for n, d, p in _TOOLS]


def openai_messages(turn: Turn) -> list[dict[str, Any]]:
    """One turn as OpenAI chat messages (no system message)."""
    out: list[dict[str, Any]] = [{"role": "user", "content": turn.user}]
    out.append(
        {
            "role": "assistant",
            "content": turn.assistant,
            "tool_calls": [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps(c.arguments)},
                }
                for c in turn.calls
            ],
        }
    )
    out.extend({"role": "tool", "tool_call_id": c.call_id, "content": c.output} for c in turn.calls)
    return out


def responses_input(turn: Turn) -> list[dict[str, Any]]:
    """One turn as Responses input items: the user message, the assistant's text and
    calls, then each call's output."""
    out: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": turn.user},
        {"type": "message", "role": "assistant", "content": turn.assistant},
    ]
    out.extend(
        {
            "type": "function_call",
            "call_id": c.call_id,
            "name": c.tool,
            "arguments": json.dumps(c.arguments, separators=(",", ":")),
        }
        for c in turn.calls
    )
    out.extend(
        {"type": "function_call_output", "call_id": c.call_id, "output": c.output}
        for c in turn.calls
    )
    return out


def responses_tools() -> list[dict[str, Any]]:
    """The tool definitions as Responses function tools."""
    return [
        {"type": "function", "name": n, "description": d, "parameters": p, "strict": False}
        for n, d, p in _TOOLS
    ]


def _results(turn: Turn) -> list[dict[str, Any]]:
    return [
        {"type": "tool_result", "tool_use_id": c.call_id, "content": c.output} for c in turn.calls
    ]


def anthropic_pair(previous: Turn | None, turn: Turn) -> list[dict[str, Any]]:
    """A turn as Anthropic messages: the user message (led by the previous turn's
    results) and the assistant message."""
    pending = _results(previous) if previous else []
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.assistant}]
    content.extend(
        {"type": "tool_use", "id": c.call_id, "name": c.tool, "input": c.arguments}
        for c in turn.calls
    )
    return [
        {"role": "user", "content": [*pending, {"type": "text", "text": turn.user}]},
        {"role": "assistant", "content": content},
    ]


def anthropic_tail(last: Turn) -> list[dict[str, Any]]:
    """The closing user message carrying the last turn's results (if it made calls)."""
    results = _results(last)
    return [{"role": "user", "content": results}] if results else []


@dataclass
class Workload:
    """A history of ``turns`` turns in every format, grown one turn at a time.

    Every format is kept incrementally (earlier turns' objects and bytes are reused), so
    preparing the next call's inputs outside the timer stays cheap as the log grows.
    """

    seed: int = 7
    turns: list[Turn] = field(default_factory=list)
    _records: list[Any] | None = None
    _openai: list[dict[str, Any]] = field(
        default_factory=lambda: [{"role": "system", "content": SYSTEM}]
    )
    _anthropic: list[dict[str, Any]] = field(default_factory=list)
    _chat_bytes: list[bytes] = field(default_factory=list)
    _messages_bytes: list[bytes] = field(default_factory=list)
    _responses: list[dict[str, Any]] = field(default_factory=list)
    _responses_bytes: list[bytes] = field(default_factory=list)

    @classmethod
    def of(cls, n: int, *, seed: int = 7) -> Workload:
        """A workload with ``n`` turns."""
        wl = cls(seed=seed)
        for _ in range(n):
            wl.grow()
        return wl

    def grow(self) -> None:
        """Append the next turn (new objects; earlier ones are kept)."""
        turn = make_turn(self.seed, len(self.turns))
        previous = self.turns[-1] if self.turns else None
        self.turns.append(turn)
        if self._records is not None:
            self._records.extend(self._nisse_records(turn, start=len(self._records)))
        chat = openai_messages(turn)
        self._openai.extend(chat)
        self._chat_bytes.append(b",".join(_json(m) for m in chat))
        pair = anthropic_pair(previous, turn)
        self._anthropic.extend(pair)
        self._messages_bytes.append(b",".join(_json(m) for m in pair))
        items = responses_input(turn)
        self._responses.extend(items)
        self._responses_bytes.append(b",".join(_json(m) for m in items))

    # nisse_llm (built on first use, so a peer's process never imports it) -----------

    def records(self) -> list[Any]:
        """The canonical log as `StoredEvent` records (the same objects call after call)."""
        if self._records is None:
            self._records = []
            for turn in self.turns:
                self._records.extend(self._nisse_records(turn, start=len(self._records)))
        return self._records

    def tail_length(self) -> int:
        """How many events the last turn has."""
        return 2 + 2 * len(self.turns[-1].calls)

    def records_fresh_tail(self) -> list[Any]:
        """The log with its last turn as new objects, as an agent's next call sees it."""
        records = self.records()
        start = len(records) - self.tail_length()
        return records[:start] + self._nisse_records(self.turns[-1], start=start)

    def records_all_fresh(self) -> list[Any]:
        """The whole log as new objects: what a first (cold) render sees."""
        out: list[Any] = []
        for turn in self.turns:
            out.extend(self._nisse_records(turn, start=len(out)))
        return out

    @staticmethod
    def _nisse_records(turn: Turn, *, start: int) -> list[Any]:
        from nisse_llm.events.canonical import (
            AssistantText,
            StoredEvent,
            ToolCall,
            ToolResult,
            UserText,
        )

        at = datetime(2026, 11, 29, tzinfo=UTC)
        events: list[Any] = [
            UserText(text=turn.user),
            AssistantText(text=turn.assistant, model=MODEL_CHAT),
        ]
        events.extend(
            ToolCall(call_id=c.call_id, tool=c.tool, arguments=c.arguments) for c in turn.calls
        )
        events.extend(ToolResult(call_id=c.call_id, output=c.output) for c in turn.calls)
        return [StoredEvent(seq=start + i, at=at, event=e) for i, e in enumerate(events)]

    @staticmethod
    def tool_specs() -> list[Any]:
        """The tool definitions as nisse_llm `ToolSpec`s."""
        from nisse_llm.events.canonical import ToolSpec

        return [ToolSpec(name=n, description=d, parameters=p) for n, d, p in _TOOLS]

    # peers ----------------------------------------------------------------------------

    def openai_messages(self) -> list[dict[str, Any]]:
        """System message plus every turn, as OpenAI chat messages (LiteLLM takes these too)."""
        return list(self._openai)

    def anthropic_messages(self) -> list[dict[str, Any]]:
        """Every turn as Anthropic messages (the system prompt travels separately)."""
        return [*self._anthropic, *anthropic_tail(self.turns[-1])]

    def chat_body(self) -> dict[str, Any]:
        """The chat completions request body a client sends for this history."""
        return {
            "model": MODEL_CHAT,
            "messages": self.openai_messages(),
            "tools": openai_tools(),
            "max_tokens": MAX_TOKENS,
        }

    def messages_body(self) -> dict[str, Any]:
        """The Anthropic messages request body a client sends for this history."""
        return {
            "model": MODEL_MESSAGES,
            "max_tokens": MAX_TOKENS,
            "system": SYSTEM,
            "messages": self.anthropic_messages(),
            "tools": anthropic_tools(),
        }

    def responses_body(self) -> dict[str, Any]:
        """The Responses request body a client sends for this history (stateless)."""
        return {
            "model": MODEL_CHAT,
            "instructions": SYSTEM,
            "input": list(self._responses),
            "tools": responses_tools(),
            "max_output_tokens": MAX_TOKENS,
            "store": False,
        }

    def responses_bytes(self) -> bytes:
        """``encode(self.responses_body())``, joined from per-turn bytes."""
        return b"".join(
            (
                b'{"model":' + _json(MODEL_CHAT),
                b',"instructions":' + _json(SYSTEM) + b',"input":[',
                b",".join(self._responses_bytes),
                b'],"tools":' + _json(responses_tools()),
                b',"max_output_tokens":' + _json(MAX_TOKENS) + b',"store":false}',
            )
        )

    def chat_bytes(self) -> bytes:
        """``encode(self.chat_body())``, joined from per-turn bytes."""
        return b"".join(
            (
                b'{"model":' + _json(MODEL_CHAT) + b',"messages":[',
                _json(self._openai[0]),
                b",",
                b",".join(self._chat_bytes),
                b'],"tools":' + _json(openai_tools()),
                b',"max_tokens":' + _json(MAX_TOKENS) + b"}",
            )
        )

    def messages_bytes(self) -> bytes:
        """``encode(self.messages_body())``, joined from per-turn bytes."""
        tail = b"".join(b"," + _json(m) for m in anthropic_tail(self.turns[-1]))
        return b"".join(
            (
                b'{"model":' + _json(MODEL_MESSAGES),
                b',"max_tokens":' + _json(MAX_TOKENS),
                b',"system":' + _json(SYSTEM) + b',"messages":[',
                b",".join(self._messages_bytes),
                tail,
                b'],"tools":' + _json(anthropic_tools()) + b"}",
            )
        )


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def encode(body: dict[str, Any]) -> bytes:
    """A body as compact UTF-8 JSON, as the floor sends it."""
    return _json(body)
