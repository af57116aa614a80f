"""What every route's renderer shares: its public surface, its walk cache and its lock,
and its recent envelopes.

A route's renderer subclasses `Renderer` and fills two public hooks:
`Renderer.encode_parts` (the body of one call in parts, called under the walk cache's lock
with the call's `CallParams`) and `Renderer.reply_parser` (its reply module's parse
function, as a static method). Every public render method takes the call's arguments as
`CallParams` spells them, once (`from_args`); what differs by route is data: the ceiling of
a call naming none (`Renderer.default_max_tokens`: the messages route must send one) and
whether it sends a ``prompt_cache_key`` (`Renderer.takes_prompt_cache_key`).

A call's rules (`CallRules`: the ceiling, the model's family, the reasoning fields, the
broken rules) come decided: the transport hands them in on the `CallParams`, once per
call, and a render without them asks the route's descriptor (`RouteDescriptor.decide`), so
this layer never reads the rule tables.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

import pydantic_core

from nisse_llm.events.canonical import Completion
from nisse_llm.render._memo import RecentMemo
from nisse_llm.render._walk import ProgressCache
from nisse_llm.render.call import CallParams

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.routes.descriptor import RouteDescriptor

__all__ = ["CallParams", "Renderer", "from_args"]

P = ParamSpec("P")
R = TypeVar("R")
RendererT = TypeVar("RendererT", bound="Renderer")


def _from(
    build: Callable[P, CallParams],
) -> Callable[[Callable[[RendererT, CallParams], R]], Callable[Concatenate[RendererT, P], R]]:
    """A method of a call, called with the call's arguments as ``build`` takes them."""

    def wrap(
        method: Callable[[RendererT, CallParams], R],
    ) -> Callable[Concatenate[RendererT, P], R]:
        @functools.wraps(method)
        def of_args(self: RendererT, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return method(self, self.call_of(build(*args, **kwargs)))

        own = inspect.signature(method)
        shown = [next(iter(own.parameters.values())), *inspect.signature(build).parameters.values()]
        of_args.__signature__ = own.replace(parameters=shown)  # type: ignore[attr-defined]
        return of_args

    return wrap


#: ``@from_args`` on a method of a call (``(self, call: CallParams)``) makes it a method of
#: the call's arguments as `CallParams` spells them (``events, tools, model, system=None,
#: *, max_tokens=None, cache=None, ...``), built into the call by `Renderer.call_of`: the
#: one signature every public render method of every route shares.
from_args = _from(CallParams)


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
    #: The ceiling a call from arguments naming none is rendered with (None: the route's
    #: fields leave it out or pick it).
    default_max_tokens: int | None = None
    #: Whether the route sends a ``prompt_cache_key`` (the Responses route's field).
    takes_prompt_cache_key: bool = False

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

    def call_of(self, call: CallParams) -> CallParams:
        """``call`` as this route takes it from a caller's arguments: with the route's
        `default_max_tokens` when it names no ceiling; a ``prompt_cache_key`` is refused
        by a route that sends none."""
        if call.prompt_cache_key is not None and not self.takes_prompt_cache_key:
            raise TypeError(f"{type(self).__name__} takes no prompt_cache_key")
        if call.max_tokens is None and self.default_max_tokens is not None:
            return replace(call, max_tokens=self.default_max_tokens)
        return call

    @from_args
    def render(self, call: CallParams) -> dict[str, Any]:
        """The body as a fresh dict (decoded from `render_bytes`, so it is the same body)."""
        return cast(dict[str, Any], pydantic_core.from_json(b"".join(self.render_call(call))))

    @from_args
    def render_bytes(self, call: CallParams) -> bytes:
        """The encoded body, byte-identical to ``render_request(...).model_dump_json(
        exclude_none=True)``: the join of `render_parts`, from memoised fragments."""
        return b"".join(self.render_call(call))

    @from_args
    def render_parts(self, call: CallParams) -> list[bytes]:
        """The body of `render_bytes` in parts that concatenate to it: the head, the cached
        blocks of the log's settled messages, and the rest with the tail (one fresh join).
        ``rules``: the call's, decided by the route for these arguments (`rules_for`)."""
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
