"""What every route's renderer shares: its public surface, its walk cache and its lock,
and its recent envelopes.

A route's renderer subclasses `Renderer` and gives it two hooks: `Renderer._parts` (the
body in parts, called under the walk cache's lock) and `Renderer._reply` (its reply
module's parse function, as a static method). It keeps its own ``render_request`` (the
typed body), and re-declares a public method only where its signature differs (the
messages route's ``max_tokens`` default, the Responses route's ``prompt_cache_key``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pydantic_core

from nisse_llm.log.canonical import Completion, LogLike, ToolsLike
from nisse_llm.render._cache import PromptCache
from nisse_llm.render._memo import RecentMemo
from nisse_llm.render._walk import ProgressCache

if TYPE_CHECKING:
    from nisse_llm.config.options import RequestOptions

__all__ = ["Renderer"]


class Renderer:
    """What the clients need of a route: render a log, parse a reply.

    Each renderer keeps its own walks of recent logs (`ProgressCache`, and its lock) and
    its recent envelopes (`RecentMemo`): nothing is shared between renderers, so two
    clients never see each other's logs or wait on each other."""

    #: The route's reply parser (``parse_*(body, *, requested_model, max_tokens)``).
    _reply: Callable[..., Completion]

    def __init__(self) -> None:
        self._walks: ProgressCache[Any] = ProgressCache()
        #: The body around the messages (head, tail) of recent calls, used under the lock.
        self._envelopes: RecentMemo[tuple[bytes, bytes]] = RecentMemo()

    def forget(self) -> None:
        """Forget the walks and envelopes of the logs rendered so far (the next render
        starts cold, and holds none of their events or tool specs)."""
        with self._walks.lock:
            self._walks.clear()
            self._envelopes.clear()

    def render(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
    ) -> dict[str, Any]:
        """The body as a fresh dict (decoded from `render_bytes`, so it is the same body)."""
        body = self.render_bytes(
            events, tools, model, system, max_tokens=max_tokens, cache=cache, options=options
        )
        return cast(dict[str, Any], pydantic_core.from_json(body))

    def render_bytes(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
    ) -> bytes:
        """The encoded body, byte-identical to ``render_request(...).model_dump_json(
        exclude_none=True)``: the join of `render_parts`, from memoised fragments."""
        return b"".join(
            self.render_parts(
                events, tools, model, system, max_tokens=max_tokens, cache=cache, options=options
            )
        )

    def render_parts(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
    ) -> list[bytes]:
        """The body of `render_bytes` in parts that concatenate to it: the head, the cached
        blocks of the log's settled messages, and the rest with the tail (one fresh join)."""
        with self._walks.lock:
            return self._parts(events, tools, model, system, max_tokens, cache, options)

    def parse(
        self,
        body: bytes | str | Mapping[str, Any],
        *,
        requested_model: str,
        max_tokens: int | None = None,
    ) -> Completion:
        """A 200 reply body as canonical events, usage and stop reason (the route's reply
        module: `openai_chat_reply`, `anthropic_messages_reply`, `openai_responses_reply`)."""
        return self._reply(body, requested_model=requested_model, max_tokens=max_tokens)

    def _parts(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None,
        max_tokens: int | None,
        cache: PromptCache | None,
        options: RequestOptions | None,
    ) -> list[bytes]:  # pragma: no cover - each route's own
        """The route's `render_parts`, run under the walk cache's lock."""
        raise NotImplementedError
