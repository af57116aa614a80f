"""The rules of one call, decided: a plain value the renderers read (data only, no logic).

`nisse_llm.config.option_rules.decide` makes it from the route, the model, the request
options, the client's output ceiling and the operator's passthrough prefixes, once per
call (and cached per those); the transport hands it to the renderer, and a standalone
render asks the route's descriptor for it. The render layer reads these fields and never
the rule tables themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CallRules"]


@dataclass(frozen=True, slots=True)
class CallRules:
    """What a renderer needs to know of a call's model and options, decided."""

    #: The output ceiling asked (the options' ``max_output_tokens``, else the client's),
    #: checked positive; None: none asked, so the provider's or client's default applies.
    ceiling: int | None
    #: The API family serving the model (by the route, its name, its ``like``, a prefix).
    family: Literal["anthropic", "openai"]
    #: The options ask for reasoning (a level or a budget, not ``"off"``).
    thinks: bool = False
    #: Claude: the thinking budget sent (None: adaptive thinking at the level asked, or no
    #: thinking at all).
    budget: int | None = None
    #: OpenAI: the reasoning effort sent (``"none"`` for ``"off"`` where the model has it;
    #: a budget becomes a level), None for nothing.
    effort: str | None = None
    #: The model reasons at all (its encrypted reasoning is asked for on the Responses route).
    reasons: bool = False
    #: The model answers in a JSON Schema natively.
    structured: bool = False
    #: The model accepts a forced ``tool_choice`` without thinking.
    forced_tool: bool = True
    #: Why the options cannot be sent to the model (empty: they can); the renderer joins
    #: them with the request's own tool-choice problems into one `RenderError`.
    problems: tuple[str, ...] = ()

    @property
    def strict_tools(self) -> bool:
        """Whether the model takes ``strict: true`` tools: an OpenAI model with native
        structured outputs (the same rule as a natively asked typed answer)."""
        return self.family == "openai" and self.structured

    @property
    def strict_messages_tools(self) -> bool:
        """Whether the model takes ``strict: true`` tools on Anthropic's messages route: a
        Claude model with native structured outputs (the proxy forwards the flag there
        unchanged, measured on LiteLLM 1.108.7)."""
        return self.family == "anthropic" and self.structured

    @property
    def replays_thinking(self) -> bool:
        """Whether a chat request turns Anthropic thinking on, so the model's own thinking
        blocks go back with its turns (Anthropic refuses a tool loop without them)."""
        return self.thinks and self.family == "anthropic"
