"""Renderers: canonical log -> wire body, and wire response -> canonical events (pure).

Each route module offers one renderer class with the same surface (`Renderer`):
``render`` (a dict, the seeds' call shape), ``render_request`` (the typed request
model), ``render_bytes`` (the hot path: the same body, encoded, byte-identical to
``render_request(...).model_dump_json(exclude_none=True)``), and ``parse``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from nisse_llm.log.canonical import Completion, LogLike, ToolsLike
from nisse_llm.render._cache import PromptCache

if TYPE_CHECKING:
    from nisse_llm.config.options import RequestOptions

__all__ = ["Renderer"]


class Renderer(Protocol):
    """What the clients need of a route: render a log, parse a reply."""

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
    ) -> dict[str, Any]: ...

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
    ) -> bytes: ...

    def parse(
        self, body: bytes | str | Mapping[str, Any], *, requested_model: str
    ) -> Completion: ...
