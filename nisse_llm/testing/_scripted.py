"""What the scripted clients share, sync or async: the turns, the calls received, and how
a turn becomes a reply's events and usage (`nisse_llm.testing.client` holds the clients)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias, assert_never

from nisse_llm.errors import TruncatedResponse
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Completion,
    LogLike,
    Reasoning,
    ToolCall,
    ToolsLike,
    ToolSpec,
    Usage,
    as_events,
    as_tool_specs,
    mint_call_id,
)
from nisse_llm.testing.bodies import RedactedThinking, Text, Thinking, ToolUse, estimate_tokens
from nisse_llm.testing.turns import Reply

__all__ = ["ClientTurn", "ScriptExhausted", "ScriptedCall", "ScriptedCore"]

ClientTurn: TypeAlias = Reply | str | BaseException


class ScriptExhausted(AssertionError):
    """The code under test made more calls than the script has turns (a test bug, not an LLMError)."""


@dataclass(frozen=True)
class ScriptedCall:
    """One ``complete`` call as the client received it."""

    events: list[CanonicalEvent]
    tools: list[ToolSpec]
    model: str
    system: str | None


class ScriptedCore:
    """The turns left and the calls received, behind one lock (shared by a client's callers)."""

    def __init__(self, turns: Iterable[ClientTurn]) -> None:
        self._lock = threading.Lock()
        self._turns: deque[ClientTurn] = deque()
        self.calls: list[ScriptedCall] = []
        self.last_usage: Usage | None = None
        self.add(*turns)

    def add(self, *turns: ClientTurn) -> None:
        for turn in turns:
            if not isinstance(turn, Reply | str | BaseException):
                raise TypeError(f"not a client turn: {turn!r}")
        with self._lock:
            self._turns.extend(turns)

    def completion(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
    ) -> Completion:
        """Record the call and answer it with the next turn: its events and usage."""
        call = ScriptedCall(
            events=as_events(events), tools=as_tool_specs(tools), model=model, system=system
        )
        with self._lock:
            self.calls.append(call)
            turn = self._turns.popleft() if self._turns else None
        if turn is None:
            raise ScriptExhausted(
                f"ScriptedClient has no turn left for call {len(self.calls)} (model {model!r})"
            )
        if isinstance(turn, BaseException):
            raise turn
        reply = Reply(parts=(Text(turn),)) if isinstance(turn, str) else turn
        if reply.truncated:
            raise TruncatedResponse(
                f"{model} hit its output limit mid-answer; raise llm.max_output_tokens"
            )
        usage = self.last_usage = _usage(reply, call)
        return Completion(events=_events(reply, model), usage=usage)


def _usage(reply: Reply, call: ScriptedCall) -> Usage:
    if reply.usage is not None:
        tokens = reply.usage
        return Usage(
            input=tokens.input,
            output=tokens.output,
            cache_read=tokens.cache_read,
            cache_write=tokens.cache_write,
        )
    sent = b"".join(event.model_dump_json().encode() for event in call.events)
    tokens = estimate_tokens(sent, reply.parts)
    return Usage(input=tokens.input, output=tokens.output)


def _events(reply: Reply, model: str) -> list[CanonicalEvent]:
    produced_by = reply.model or model
    out: list[CanonicalEvent] = []
    for part in reply.parts:
        if isinstance(part, Text):
            if part.text.strip():
                out.append(AssistantText(text=part.text, model=produced_by))
        elif isinstance(part, ToolUse):
            out.append(
                ToolCall(call_id=mint_call_id(), tool=part.name, arguments=dict(part.arguments))
            )
        elif isinstance(part, Thinking):
            block = {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
            out.append(Reasoning(model=model, response_model=produced_by, block=block))
        elif isinstance(part, RedactedThinking):
            block = {"type": "redacted_thinking", "data": part.data}
            out.append(Reasoning(model=model, response_model=produced_by, block=block))
        else:
            assert_never(part)
    return out
