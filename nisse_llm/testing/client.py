"""`ScriptedClient`: the client protocol answered from a list of turns, with no HTTP at all.

For an agent's own unit tests: hand the agent a `ScriptedClient` where it expects a
`LiteLLMClient`, script the model's turns, then assert on the calls it recorded.
A turn is a `Reply` (or a plain string, a text reply) or an exception to raise.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TypeAlias, TypeVar, assert_never

from pydantic import BaseModel

from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import TruncatedResponse
from nisse_llm.log.canonical import (
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
from nisse_llm.render.typed import TypedExchange, TypedReply, answer_rules
from nisse_llm.testing.bodies import RedactedThinking, Text, Thinking, ToolUse, estimate_tokens
from nisse_llm.testing.turns import Reply

__all__ = ["AsyncScriptedClient", "ClientTurn", "ScriptExhausted", "ScriptedCall", "ScriptedClient"]

ClientTurn: TypeAlias = Reply | str | BaseException
M = TypeVar("M", bound=BaseModel)


class ScriptExhausted(AssertionError):
    """The code under test made more calls than the script has turns (a test bug, not an LLMError)."""


@dataclass(frozen=True)
class ScriptedCall:
    """One ``complete`` call as the client received it."""

    events: list[CanonicalEvent]
    tools: list[ToolSpec]
    model: str
    system: str | None


class _Core:
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

    def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
    ) -> list[CanonicalEvent]:
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
        self.last_usage = _usage(reply, call)
        return _events(reply, model)


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


def _typed(
    output_type: type[M],
    events: LogLike,
    tools: ToolsLike,
    model: str,
    system: str | None,
    options: RequestOptions | None,
    repair_attempts: int,
) -> TypedExchange[M]:
    return TypedExchange.begin(
        output_type,
        events,
        tools,
        system,
        options=options,
        repair_attempts=repair_attempts,
        rules=answer_rules("openai_chat", model, options),
        route="openai_chat",
    )


def _completion(events: list[CanonicalEvent], usage: Usage | None) -> Completion:
    return Completion(events=events, usage=usage or Usage())


class ScriptedClient:
    """A synchronous client answering from scripted turns; records every call.

    Replies become canonical events as a real client's parser makes them: text to
    `AssistantText`, tool uses to `ToolCall` with freshly minted ids, thinking blocks
    to `Reasoning`; a truncated reply raises `TruncatedResponse`; an exception turn is
    raised as is (script the `UpstreamUnavailable` or `BudgetExhausted` you want the
    agent to meet). More calls than turns raise `ScriptExhausted`.
    """

    def __init__(self, turns: Iterable[ClientTurn] = ()) -> None:
        self._core = _Core(turns)

    def add(self, *turns: ClientTurn) -> ScriptedClient:
        """Append turns; returns the client for chaining."""
        self._core.add(*turns)
        return self

    @property
    def calls(self) -> Sequence[ScriptedCall]:
        """Every call received, oldest first."""
        return self._core.calls

    @property
    def last_usage(self) -> Usage | None:
        """Tokens the last successful call used (as scripted, or estimated)."""
        return self._core.last_usage

    def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Record the call and answer with the next turn."""
        return self._core.complete(events, tools, model, system)

    def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
    ) -> TypedReply[M]:
        """A typed answer from the scripted turns, as the real clients make it: script the
        answer as ``reply(ToolUse("<Model's class name>", {...}))``."""
        exchange = _typed(output_type, events, tools, model, system, options, repair_attempts)
        while True:
            reply = self._core.complete(exchange.log, exchange.tools, model, exchange.system)
            typed = exchange.settle(_completion(reply, self._core.last_usage))
            if typed is not None:
                return typed

    def close(self) -> None:
        """Nothing to release; present for the client protocol."""

    def __enter__(self) -> ScriptedClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncScriptedClient:
    """The async twin of `ScriptedClient`: ``await client.complete(...)``."""

    def __init__(self, turns: Iterable[ClientTurn] = ()) -> None:
        self._core = _Core(turns)

    def add(self, *turns: ClientTurn) -> AsyncScriptedClient:
        """Append turns; returns the client for chaining."""
        self._core.add(*turns)
        return self

    @property
    def calls(self) -> Sequence[ScriptedCall]:
        """Every call received, oldest first."""
        return self._core.calls

    @property
    def last_usage(self) -> Usage | None:
        """Tokens the last successful call used (as scripted, or estimated)."""
        return self._core.last_usage

    async def complete(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
    ) -> list[CanonicalEvent]:
        """Record the call and answer with the next turn."""
        return self._core.complete(events, tools, model, system)

    async def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        options: RequestOptions | None = None,
        repair_attempts: int = 0,
    ) -> TypedReply[M]:
        """`ScriptedClient.complete_as` for asyncio."""
        exchange = _typed(output_type, events, tools, model, system, options, repair_attempts)
        while True:
            reply = self._core.complete(exchange.log, exchange.tools, model, exchange.system)
            typed = exchange.settle(_completion(reply, self._core.last_usage))
            if typed is not None:
                return typed

    async def aclose(self) -> None:
        """Nothing to release; present for the client protocol."""

    async def __aenter__(self) -> AsyncScriptedClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
