"""Clients of either route, sync or async, over the in-process scripted transport."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from nisse_llm import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    AsyncOpenAIResponsesClient,
    CanonicalEvent,
    LiteLLMClient,
    OpenAIResponsesClient,
)
from nisse_llm.events.canonical import Completion
from nisse_llm.testing import Script, ScriptedTransport

BASE = "http://proxy.test:4000"
TOKEN = "sk-telemetry-secret-0000"
#: A current model of each family, on its natural route.
MODELS = {"openai_chat": "gpt-5.4-mini", "anthropic_messages": "claude-opus-5-5"}
PROVIDERS = {"openai_chat": "openai", "anthropic_messages": "anthropic"}
ROUTES = tuple(MODELS)
#: The Responses route too, for what every route must report alike.
EVERY_ROUTE_MODELS = {**MODELS, "openai_responses": "gpt-5.4-mini"}


def _no_sleep(seconds: float) -> None:
    return None


async def _no_async_sleep(seconds: float) -> None:
    return None


@dataclass
class Caller:
    """One route, sync or async: sends a call and returns what the client returned."""

    route: str
    asynchronous: bool

    @property
    def model(self) -> str:
        return EVERY_ROUTE_MODELS[self.route]

    def _client(
        self, transport: httpx.BaseTransport | httpx.AsyncBaseTransport, **options: Any
    ) -> Any:
        kinds = {
            ("openai_chat", False): LiteLLMClient,
            ("openai_chat", True): AsyncLiteLLMClient,
            ("anthropic_messages", False): AnthropicPassthroughClient,
            ("anthropic_messages", True): AsyncAnthropicPassthroughClient,
            ("openai_responses", False): OpenAIResponsesClient,
            ("openai_responses", True): AsyncOpenAIResponsesClient,
        }
        sleep: Callable[[float], Any] = _no_async_sleep if self.asynchronous else _no_sleep
        return kinds[(self.route, self.asynchronous)](
            BASE, TOKEN, transport=transport, sleep=sleep, rate_limit_wait_s=0.5, **options
        )

    async def complete(
        self,
        script: Script,
        events: list[CanonicalEvent],
        *,
        client_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[CanonicalEvent]:
        transport = ScriptedTransport(script)
        client = self._client(transport, **(client_options or {}))
        tools = kwargs.pop("tools", None)
        model = kwargs.pop("model", self.model)
        if self.asynchronous:
            async with client:
                return list(await client.complete(events, tools, model, **kwargs))
        with client:
            return list(client.complete(events, tools, model, **kwargs))

    async def stream(
        self,
        script: Script,
        events: list[CanonicalEvent],
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        **kwargs: Any,
    ) -> Completion:
        client = self._client(transport or ScriptedTransport(script))
        tools = kwargs.pop("tools", None)
        if self.asynchronous:
            async with client, client.stream(events, tools, self.model, **kwargs) as reply:
                async for _ in reply:
                    pass
                return reply.completion
        with client, client.stream(events, tools, self.model, **kwargs) as sync_reply:
            for _ in sync_reply:
                pass
            return sync_reply.completion


CALLERS = [Caller(route, asynchronous) for route in ROUTES for asynchronous in (False, True)]
EVERY_ROUTE_CALLERS = [
    Caller(route, asynchronous) for route in EVERY_ROUTE_MODELS for asynchronous in (False, True)
]


def caller_id(caller: Caller) -> str:
    return f"{caller.route}-{'async' if caller.asynchronous else 'sync'}"
