"""What each model family accepts, in one table (pure, no I/O).

A row names the models it covers (by name, or a name followed by ``-`` and a suffix such
as a date: ``claude-opus-4-5`` covers ``claude-opus-4-5-20251101``; the longest name
wins) and says what they take: reasoning effort levels, adaptive thinking, a manual
thinking budget, whether reasoning can be turned off, a thinking display, sampling, a
forced tool choice, native structured answers, and the route they take by default. Each
row cites where its facts come from:

- ``sdk``: the pinned official SDKs' types (anthropic 2.14: ``ThinkingConfig*Param``,
  ``OutputConfigParam``; openai 3.57: ``ReasoningEffort``, ``ChatModel``) and warnings
  (anthropic: "Using Claude with claude-opus-4-6 and 'thinking.type=enabled' is deprecated.
  Use 'thinking.type=adaptive' instead").
- ``docs``: provider pages: claude-opus-4-8 answers a manual budget with 400
  ``"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive"
  and "output_config.effort"``; the 5.5 family refuses manual thinking; opus-5-5 and
  sonnet-5-5 refuse ``disabled`` and a forced tool even without thinking; no Claude model
  takes ``minimal``; OpenAI reasoning models take only the default sampling ("Only the
  default (1) value is supported").
- ``proxy``: measured through LiteLLM 1.108.7 (`tests/integration/test_model_matrix.py`
  asserts it): it refuses ``reasoning_effort`` ``none`` and ``minimal`` for gpt-6-astra,
  ``minimal`` for gpt-5.4-mini, gpt-5.5 and gpt-5.6-sol, any ``reasoning_effort`` for
  gpt-4.1-mini, ``xhigh`` for claude-sonnet-4-6; it drops ``thinking: {type: disabled}`` for
  opus-5-5 and sonnet-5-5 and turns adaptive thinking into a 4,096 budget for sonnet-4-5.

The route column: Claude models take the messages route; OpenAI's current reasoning models
(gpt-5.4 and later, the gpt-6 family) take the Responses route, because the real API
refuses function tools with a reasoning effort on chat completions for them ("Function
tools with reasoning_effort are not supported for gpt-5.6-terra in /v1/chat/completions.
To use function tools, use /v1/responses or set reasoning_effort to 'none'", public issue
threads May to September 2026; for 5.6 and later the default effort triggers it even when
none is sent), and the proxy's own bridge of such a chat request drops the encrypted
reasoning (measured, `tests/integration/test_responses_route.py`); other OpenAI models
take the chat route.

A model no row covers follows its family's ``unplaced`` rules, which are the ones this
library kept before the table (a level becomes a thinking budget for Claude and goes as it
is to OpenAI); `nisse-llm config check --online` reports such a role, and a role profile's
``like`` names the model whose rules a proxy alias follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.routes.openai_responses import OPENAI_RESPONSES

__all__ = [
    "LEVELS",
    "MODEL_RULES",
    "UNPLACED",
    "Family",
    "Level",
    "ModelRules",
    "rules_for",
]

#: Which API family serves a model: decides the reasoning fields and the sampling rule.
Family: TypeAlias = Literal["anthropic", "openai"]
#: Effort levels, weakest first.
Level: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
LEVELS: Final[tuple[Level, ...]] = ("minimal", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True, slots=True)
class ModelRules:
    """What the models of one family row accept."""

    family: Family
    #: The model names the row covers (each also covers ``NAME-<suffix>``).
    names: tuple[str, ...]
    #: The effort levels the model takes (empty: it does not reason).
    levels: tuple[Level, ...]
    #: Claude: a level goes as ``thinking: {type: adaptive}`` with ``output_config.effort``
    #: (else as a thinking budget). Not used for OpenAI models.
    adaptive: bool
    #: Whether a thinking budget in tokens can be asked for.
    budgets: bool
    #: Whether reasoning can be turned off (``"off"``).
    can_turn_off: bool
    #: OpenAI: ``"off"`` is sent as ``reasoning_effort: "none"`` (else nothing is sent).
    none_effort: bool = False
    #: Claude: a thinking ``display`` (``summarized`` / ``omitted``) can be asked for.
    display: bool = False
    #: ``temperature`` / ``top_p`` are accepted.
    sampling: bool = False
    #: A forced ``tool_choice`` (``required`` or a tool's name) is accepted without thinking.
    forced_tool: bool = True
    #: Structured answers natively (``output_config.format`` / strict ``response_format``).
    structured: bool = False
    #: The route the model takes by default.
    route: str = OPENAI_CHAT.name
    #: Where the row's facts come from (module docstring).
    sources: tuple[str, ...] = ()
    #: False for a family's fallback, used for models no row covers.
    placed: bool = True

    def offers(self) -> str:
        """The reasoning the model takes, in words, for error messages."""
        parts = []
        if self.levels:
            parts.append("levels " + ", ".join(repr(level) for level in self.levels))
        if self.budgets:
            parts.append("a thinking budget in tokens")
        if self.can_turn_off:
            parts.append("'off'")
        return " or ".join(parts) if parts else "no reasoning setting"


_CLAUDE_ADAPTIVE: tuple[Level, ...] = ("low", "medium", "high", "xhigh", "max")
_CLAUDE_NO_XHIGH: tuple[Level, ...] = ("low", "medium", "high", "max")
_BUDGET_LEVELS: tuple[Level, ...] = ("low", "medium", "high")
_GPT_CURRENT: tuple[Level, ...] = ("low", "medium", "high", "xhigh", "max")


def _claude(
    *names: str,
    levels: tuple[Level, ...] = _CLAUDE_ADAPTIVE,
    adaptive: bool = True,
    budgets: bool = False,
    can_turn_off: bool = True,
    forced_tool: bool = True,
    sources: tuple[str, ...],
) -> ModelRules:
    return ModelRules(
        family="anthropic",
        names=names,
        levels=levels,
        adaptive=adaptive,
        budgets=budgets,
        can_turn_off=can_turn_off,
        display=adaptive,
        forced_tool=forced_tool,
        structured=True,
        route=ANTHROPIC_MESSAGES.name,
        sources=sources,
    )


def _gpt(
    *names: str,
    levels: tuple[Level, ...],
    can_turn_off: bool,
    none_effort: bool = False,
    route: str = OPENAI_CHAT.name,
    sources: tuple[str, ...],
) -> ModelRules:
    return ModelRules(
        family="openai",
        names=names,
        levels=levels,
        adaptive=False,
        budgets=False,
        can_turn_off=can_turn_off,
        none_effort=none_effort,
        sampling=not levels,
        structured=True,
        route=route,
        sources=sources,
    )


#: Every placed family, newest first.
MODEL_RULES: Final[tuple[ModelRules, ...]] = (
    _claude(
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        can_turn_off=False,
        forced_tool=False,
        sources=("sdk", "docs", "proxy"),
    ),
    _claude("claude-haiku-5-5", sources=("sdk", "docs", "proxy")),
    # The rest of the 5 generation: adaptive only, as the 5.5 family (no manual budget).
    _claude(
        "claude-opus-5",
        "claude-sonnet-5",
        "claude-fable-5",
        "claude-fable-5-1",
        "claude-fable-5-2",
        "claude-mythos-5",
        "claude-mythos-5-1",
        "claude-mythos-5-2",
        sources=("sdk", "docs"),
    ),
    _claude("claude-opus-4-8", "claude-opus-4-7", sources=("sdk", "docs", "proxy")),
    _claude(
        "claude-opus-4-6",
        "claude-mythos-preview",
        levels=_CLAUDE_NO_XHIGH,
        budgets=True,
        sources=("sdk",),
    ),
    _claude("claude-sonnet-4-6", levels=_CLAUDE_NO_XHIGH, budgets=True, sources=("docs", "proxy")),
    _claude(
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        levels=_BUDGET_LEVELS,
        adaptive=False,
        budgets=True,
        sources=("sdk", "proxy"),
    ),
    _gpt(
        "gpt-6-astra",
        "gpt-6.2-astra",
        "gpt-6-sol",
        "gpt-6.1-sol",
        "gpt-6.2-sol",
        "gpt-6.1-terra",
        "gpt-6-luna",
        levels=_GPT_CURRENT,
        can_turn_off=False,
        route=OPENAI_RESPONSES.name,
        sources=("sdk", "docs", "proxy"),
    ),
    _gpt(
        "gpt-5.6-sol",
        "gpt-5.6-terra",
        "gpt-5.6-luna",
        "gpt-5.5",
        "gpt-5.4",
        levels=_GPT_CURRENT,
        can_turn_off=True,
        none_effort=True,
        route=OPENAI_RESPONSES.name,
        sources=("sdk", "docs", "proxy"),
    ),
    _gpt(
        "gpt-5.3",
        "gpt-5.2",
        "gpt-5.1",
        levels=("low", "medium", "high"),
        can_turn_off=True,
        none_effort=True,
        sources=("sdk", "docs"),
    ),
    _gpt(
        "gpt-5", levels=("minimal", "low", "medium", "high"), can_turn_off=False, sources=("docs",)
    ),
    _gpt(
        "o1",
        "o3",
        "o4-mini",
        "codex-mini-latest",
        levels=("low", "medium", "high"),
        can_turn_off=False,
        sources=("docs",),
    ),
    _gpt(
        "gpt-4.1",
        "gpt-4o",
        "gpt-4",
        "gpt-3.5-turbo",
        "chatgpt-4o-latest",
        "gpt-audio-mini",
        levels=(),
        can_turn_off=True,
        sources=("sdk", "proxy"),
    ),
)

#: The rules of a model no row covers, per family: what the library did before the table.
UNPLACED: Final[dict[Family, ModelRules]] = {
    "anthropic": ModelRules(
        family="anthropic",
        names=(),
        levels=_BUDGET_LEVELS,
        adaptive=False,
        budgets=True,
        can_turn_off=True,
        route=ANTHROPIC_MESSAGES.name,
        placed=False,
    ),
    "openai": ModelRules(
        family="openai",
        names=(),
        levels=("low", "medium", "high"),
        adaptive=False,
        budgets=True,
        can_turn_off=True,
        sampling=True,
        placed=False,
    ),
}

_BY_NAME: Final[dict[str, ModelRules]] = {name: row for row in MODEL_RULES for name in row.names}


def _base_name(model: str) -> str:
    """The model's own name: without a LiteLLM provider path, lower case."""
    return model.rsplit("/", 1)[-1].lower()


def placed_rules(model: str) -> ModelRules | None:
    """The row covering ``model`` (the longest name it is, or starts with plus ``-``)."""
    name = _base_name(model)
    while True:
        row = _BY_NAME.get(name)
        if row is not None:
            return row
        cut = name.rfind("-")
        if cut <= 0:
            return None
        name = name[:cut]


def rules_for(model: str, family: Family) -> ModelRules:
    """The rules ``model`` follows; ``family`` (from its name and route) picks the fallback
    for a model no row covers, and a row of the other family is not used."""
    row = placed_rules(model)
    if row is not None and row.family == family:
        return row
    return UNPLACED[family]
