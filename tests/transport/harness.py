"""Build either route's client, sync or async, and call it the same way from an async test."""

from __future__ import annotations

from typing import Any, Literal

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import CanonicalEvent, UserText
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from nisse_llm.transport.responses_client import AsyncOpenAIResponsesClient, OpenAIResponsesClient
from tests.transport.loopback import SleepLog

Mode = Literal["sync", "async"]
ROUTES: tuple[Route, ...] = ("openai_chat", "anthropic_messages", "openai_responses")
MODES: tuple[Mode, ...] = ("sync", "async")
#: A token distinctive enough that any leak is found by substring search.
TOKEN = "sk-loopback-7f3a9c2e41d8-SECRET"
MODEL: dict[Route, str] = {
    "openai_chat": "gpt-4o-mini",
    "anthropic_messages": "claude-sonnet-4-5",
    "openai_responses": "gpt-6-astra",
}
EVENTS = [UserText(text="Say hello.")]

_CLASSES: dict[tuple[Route, Mode], type[Any]] = {
    ("openai_chat", "sync"): LiteLLMClient,
    ("anthropic_messages", "sync"): AnthropicPassthroughClient,
    ("openai_chat", "async"): AsyncLiteLLMClient,
    ("anthropic_messages", "async"): AsyncAnthropicPassthroughClient,
    ("openai_responses", "sync"): OpenAIResponsesClient,
    ("openai_responses", "async"): AsyncOpenAIResponsesClient,
}
_SYNC = (LiteLLMClient, AnthropicPassthroughClient, OpenAIResponsesClient)


def make_client(route: Route, mode: Mode, base_url: str, *, sleep: SleepLog, **options: Any) -> Any:
    """A client of the route's class for the mode, its sleep recorded by ``sleep``."""
    wait = sleep if mode == "sync" else sleep.asleep
    return _CLASSES[route, mode](base_url, TOKEN, sleep=wait, **options)


async def complete(client: Any, *args: Any, **kwargs: Any) -> list[CanonicalEvent]:
    """``client.complete(...)``, awaited when the client is async."""
    result = client.complete(*args, **kwargs)
    if not isinstance(client, _SYNC):
        result = await result
    return list(result)


async def close(client: Any) -> None:
    """Close a client of either kind."""
    if isinstance(client, _SYNC):
        client.close()
    else:
        await client.aclose()


def assert_no_token(exc: BaseException) -> None:
    """The token appears nowhere an exception exposes text."""
    texts = [str(exc), repr(exc), *(repr(a) for a in exc.args)]
    for name in ("message", "server_message", "error_type"):
        texts.append(repr(getattr(exc, name, None)))
    for text in texts:
        assert TOKEN not in text, text
