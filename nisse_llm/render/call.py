"""One model call as a value: what is asked of the route, built once per call and handed
through the renderers, clients and the testing kit by name (pure, data only).

pydantic-ai's ``ModelRequestParameters`` is the model: a new thing a call carries is one
field here, not one more argument in every signature that passes it on.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace
from typing import TYPE_CHECKING

from nisse_llm.events.canonical import LogLike, ToolsLike
from nisse_llm.render._cache import PromptCache

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions

__all__ = ["CallParams"]


@dataclass(frozen=True, slots=True)
class CallParams:
    """What one call asks: the log, the tools, the model and how the request is made."""

    #: The canonical log the body is rendered from.
    events: LogLike
    #: The tools offered (None: none).
    tools: ToolsLike
    #: The model string the request names.
    model: str
    #: The system prompt (None or blank: none).
    system: str | None = None
    _: KW_ONLY
    #: The client's output ceiling (the options' ``max_output_tokens`` wins over it).
    max_tokens: int | None = None
    #: The prompt-cache policy (None: no breakpoints; its prefixes say which models are
    #: Anthropic's).
    cache: PromptCache | None = None
    #: The request options, already layered over the role's profile.
    options: RequestOptions | None = None
    #: The call's rules, decided once by the route (None: not decided yet; the renderer
    #: asks its route's descriptor).
    rules: CallRules | None = None
    #: The Responses route's ``prompt_cache_key`` (None: derived from the log).
    prompt_cache_key: str | None = None

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The operator's passthrough prefixes, as the cache policy carries them."""
        return () if self.cache is None else self.cache.prefixes

    def decided(self, rules: CallRules) -> CallParams:
        """These parameters with the call's ``rules``."""
        return replace(self, rules=rules)
