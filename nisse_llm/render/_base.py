"""What every route's renderer shares: its public surface, its walk cache and its lock,
and its recent envelopes.

A route's renderer subclasses `Renderer` and fills two public hooks:
`Renderer.encode_parts` (the body of one call in parts, called under the walk cache's lock
with the call's `CallParams`) and `Renderer.reply_parser` (its reply module's parse
function, as a static method). It keeps its own ``render_request`` (the typed body), and
re-declares a public method only where its signature differs (the Responses route's
``prompt_cache_key``). A ``max_tokens`` of None leaves the ceiling to the route: the
messages route, which must send one, sends `DEFAULT_MAX_OUTPUT_TOKENS`.

A call's rules (`CallRules`: the ceiling, the model's family, the reasoning fields, the
broken rules) come decided: the transport hands them in on the `CallParams`, once per
call, and a render without them asks the route's descriptor (`RouteDescriptor.decide`), so
this layer never reads the rule tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pydantic_core

from nisse_llm.events.canonical import Completion, LogLike, ToolsLike
from nisse_llm.render._cache import PromptCache
from nisse_llm.render._memo import RecentMemo
from nisse_llm.render._walk import ProgressCache
from nisse_llm.render.call import CallParams

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["CallParams", "Renderer"]


class Renderer:
    """What the clients need of a route: render a log, parse a reply.

    Each renderer keeps its own walks of recent logs (`ProgressCache`, and its lock) and
    its recent envelopes (`RecentMemo`): nothing is shared between renderers, so two
    clients never see each other's logs or wait on each other."""

    #: Hook: the route's reply parser, ``(body, *, requested_model, max_tokens) ->
    #: Completion`` (set as ``staticmethod(parse_...)``); `parse` calls it.
    reply_parser: Callable[..., Completion]
    #: The route whose rules the renderer reads (its descriptor decides them); None for a
    #: renderer that reads none, whose `encode_parts` gets a call without rules.
    route: RouteDescriptor | None = None

    def __init__(self) -> None:
        self._walks: ProgressCache[Any] = ProgressCache()
        #: The body around the messages (head, tail) of recent calls, used under the lock.
        self._envelopes: RecentMemo[tuple[bytes, bytes]] = RecentMemo()

    def encode_parts(self, call: CallParams) -> list[bytes]:
        """Hook: the body of ``call`` in parts that concatenate to it (its rules decided
        when the renderer names its `route`). Called under the walk cache's lock, so it
        may read and grow the renderer's walks and envelopes."""
        raise NotImplementedError(f"{type(self).__name__} does not encode bodies")

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
        call = CallParams(events, tools, model, system, max_tokens, cache, options)
        return b"".join(self.render_call(call))

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
        rules: CallRules | None = None,
    ) -> list[bytes]:
        """The body of `render_bytes` in parts that concatenate to it: the head, the cached
        blocks of the log's settled messages, and the rest with the tail (one fresh join).
        ``rules``: the call's, decided by the route for these arguments (`rules_for`)."""
        call = CallParams(events, tools, model, system, max_tokens, cache, options, rules)
        return self.render_call(call)

    def render_call(self, call: CallParams) -> list[bytes]:
        """The body of ``call`` in parts (`render_parts`), its rules decided first when the
        renderer names its `route` and the call has none."""
        if self.route is not None and call.rules is None:
            call = call.decided(self.rules_for(call))
        with self._walks.lock:
            return self.encode_parts(call)

    def rules_for(self, call: CallParams) -> CallRules:
        """``call``'s rules when it has them, else the route's decision for a call to its
        model with its options under its ceiling (the passthrough prefixes are its
        cache policy's)."""
        if call.rules is not None:
            return call.rules
        assert self.route is not None, "a renderer that reads rules names its route"
        decision: CallRules = self.route.decide(
            call.model, call.options, max_tokens=call.max_tokens, prefixes=call.prefixes
        )
        return decision

    def parse(
        self,
        body: bytes | str | Mapping[str, Any],
        *,
        requested_model: str,
        max_tokens: int | None = None,
    ) -> Completion:
        """A 200 reply body as canonical events, usage and stop reason (the route's reply
        module: `openai_chat_reply`, `anthropic_messages_reply`, `openai_responses_reply`)."""
        return self.reply_parser(body, requested_model=requested_model, max_tokens=max_tokens)
