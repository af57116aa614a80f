# Generated from nisse_llm/testing/_async/client.py by scripts/gen_sync.py (unasync); do not edit.
"""The scripted client, written once: ``_async/client.py`` is the source, ``_sync/client.py``
is generated from it by ``scripts/gen_sync.py`` (unasync). The turns, the calls and how a
turn becomes a reply are `nisse_llm.testing._scripted`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Self, TypeVar, Unpack

from pydantic import BaseModel

from nisse_llm._closing import Closing
from nisse_llm.events.canonical import CanonicalEvent, Completion, LogLike, ToolsLike, Usage
from nisse_llm.render.call import CallParams
from nisse_llm.render.typed import TypedReply
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.testing._scripted import ClientTurn, ScriptedCall, ScriptedCore
from nisse_llm.transport._client_base import next_ask, typed_exchange
from nisse_llm.transport.core import CallOptions

__all__ = ["ScriptedClient"]

M = TypeVar("M", bound=BaseModel)


class ScriptedClient(Closing):
    """A client answering from scripted turns (``client.complete(...)``); records
    every call.

    Replies become canonical events as a real client's parser makes them: text to
    `AssistantText`, tool uses to `ToolCall` with freshly minted ids, thinking blocks
    to `Reasoning`; a truncated reply raises `TruncatedResponse`; an exception turn is
    raised as is (script the `UpstreamUnavailable` or `BudgetExhausted` you want the
    agent to meet). More calls than turns raise `ScriptExhausted`.
    """

    def __init__(self, turns: Iterable[ClientTurn] = ()) -> None:
        self._core = ScriptedCore(turns)

    def add(self, *turns: ClientTurn) -> Self:
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
        **how: Unpack[CallOptions],
    ) -> list[CanonicalEvent]:
        """Record the call and answer with the next turn."""
        return (self.complete_call(self.call_params(events, tools, model, system, **how))).events

    def completion(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> Completion:
        """``complete()``, returning this call's whole `Completion` (its events and usage)."""
        return self.complete_call(self.call_params(events, tools, model, system, **how))

    def call_params(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        **how: Unpack[CallOptions],
    ) -> CallParams:
        """One call's parameters, as a real client's ``call_params`` builds them (a
        scripted client has no prompt cache: ``cache`` is accepted and left out)."""
        return CallParams(events, tools, model, system, options=how.get("options"))

    def complete_call(self, params: CallParams) -> Completion:
        """``completion()`` of a call's parameters built once: recorded, and answered with
        the next turn."""
        return self._core.completion(params.events, params.tools, params.model, params.system)

    def complete_as(
        self,
        output_type: type[M],
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        repair_attempts: int = 0,
        **how: Unpack[CallOptions],
    ) -> TypedReply[M]:
        """A typed answer from the scripted turns, as the real clients make it: script the
        answer as ``reply(ToolUse("<Model's class name>", {...}))``."""
        params = self.call_params(events, tools, model, system, **how)
        exchange = typed_exchange(OPENAI_CHAT.name, output_type, params, repair_attempts)
        while True:
            typed = exchange.settle(self.complete_call(next_ask(exchange, params)))
            if typed is not None:
                return typed

    def close(self) -> None:
        """Nothing to release; present for the client protocol."""
