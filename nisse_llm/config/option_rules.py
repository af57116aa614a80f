"""The rules request options must keep, per model family and route (pure, no I/O).

Every rule here answers something a provider (or the LiteLLM proxy in front of it) rejects
or gets wrong, and is checked before anything is sent: by the renderers for a call
(`nisse_llm.render._options` turns a violation into a `RenderError`) and by the config for
a role profile (a `ConfigError` at load time). They need only the options, the model and
the output ceiling; `decide` applies them once per call into the `CallRules` value the
renderers read (a tool choice naming no tool of the request is the renderer's own check).

What each model family accepts (effort levels, budgets, turning reasoning off, a thinking
display, sampling, a forced tool) is `nisse_llm.config.model_rules`' table; this module applies it.
Sources of the rules that hold for a whole provider (each rule cites its own):

- Anthropic, extended thinking: "budget_tokens ... Must be >=1024 and less than
  `max_tokens`" (the official SDK's ``ThinkingConfigEnabledParam``,
  https://platform.claude.com/docs/en/build-with-claude/extended-thinking); "Tool use with
  thinking only supports ``tool_choice: {"type": "auto"}`` (the default) or
  ``tool_choice: {"type": "none"}``" (same page, extended thinking with tool use).
- Anthropic, API version 2026-10-21: "The temperature, top_p, and top_k request parameters
  are removed. A request that sends any of them returns a 400"
  (https://platform.claude.com/docs/en/api/versioning,
  https://platform.claude.com/docs/en/api/migration-2026-10-21); the official SDK 2.x
  request types no longer have these fields.
- Anthropic stop sequences may not be whitespace only (LiteLLM drops such sequences on the
  way to Anthropic, ``_map_stop_sequences``, rather than send what the API refuses).
- OpenAI chat completions: ``stop``: "Up to 4 sequences"; ``tool_choice`` other than
  ``none`` needs ``tools``; ``temperature`` 0 to 2; ``top_p`` at most 1
  (https://platform.openai.com/docs/api-reference/chat/create, the official SDK's
  ``CompletionCreateParams``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final, Literal

from nisse_llm.config.call_rules import CallRules
from nisse_llm.config.model_rules import Family, ModelRules, rules_for
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.routes.anthropic_messages import is_anthropic_model
from nisse_llm.routes.openai_chat import CHAT_MAX_STOP_SEQUENCES
from nisse_llm.routes.table import ROUTE_TABLE

if TYPE_CHECKING:
    from nisse_llm.config.options import ReasoningEffort, RequestOptions

__all__ = [
    "ANTHROPIC_MIN_THINKING_BUDGET",
    "CHAT_MAX_STOP_SEQUENCES",
    "EFFORT_BUDGETS",
    "Family",
    "Violation",
    "decide",
    "effort_for_budget",
    "is_anthropic_model",
    "model_violations",
    "request_rules",
    "thinking_budget",
    "thinks",
]


class Violation:
    """One broken rule: the option fields involved and why the combination is refused."""

    __slots__ = ("fields", "reason")

    def __init__(self, fields: tuple[str, ...], reason: str) -> None:
        self.fields = fields
        self.reason = reason


#: "budget_tokens ... Must be >=1024" (Anthropic extended thinking).
ANTHROPIC_MIN_THINKING_BUDGET: Final = 1024
#: The thinking budget of each effort level on Claude models that take budgets rather than
#: adaptive thinking, before the ceiling's cap (at most half the output ceiling, so the
#: answer keeps at least the other half; never below the API's minimum of 1,024).
EFFORT_BUDGETS: Final[dict[str, int]] = {"low": 2048, "medium": 8192, "high": 24576}


def request_rules(
    model: str,
    like: str | None,
    *,
    route: str,
    prefixes: tuple[str, ...] = (),
) -> ModelRules:
    """The rules a request to ``model`` (standing for ``like``, if given) on ``route`` keeps:
    every model on the messages route is served by Anthropic's API."""
    named = like or model
    anthropic = ROUTE_TABLE[route].family == "anthropic" or is_anthropic_model(named, prefixes)
    return rules_for(named, "anthropic" if anthropic else "openai")


def thinking_budget(reasoning: ReasoningEffort | int, ceiling: int) -> int | None:
    """The Anthropic thinking budget ``reasoning`` asks for under ``ceiling`` (None: off).

    An int is the budget itself; a level is `EFFORT_BUDGETS`'s, capped at half the ceiling
    and raised to the API's minimum (so a ceiling of 1,024 or less cannot think: see
    `model_violations`).
    """
    if reasoning == "off":
        return None
    if isinstance(reasoning, int):
        return reasoning
    return max(ANTHROPIC_MIN_THINKING_BUDGET, min(EFFORT_BUDGETS[reasoning], ceiling // 2))


def effort_for_budget(reasoning: int) -> Literal["low", "medium", "high"]:
    """The effort level a budget becomes for an OpenAI model no row places: the smallest
    level whose `EFFORT_BUDGETS` entry holds it (``high`` past them all)."""
    if reasoning <= EFFORT_BUDGETS["low"]:
        return "low"
    return "medium" if reasoning <= EFFORT_BUDGETS["medium"] else "high"


def thinks(options: RequestOptions) -> bool:
    """Whether ``options`` ask for reasoning (a level or a budget, not ``"off"``)."""
    return options.reasoning is not None and options.reasoning != "off"


def _forces_a_tool(options: RequestOptions) -> bool:
    return options.tool_choice is not None and options.tool_choice not in ("auto", "none")


def _reasoning_violations(
    options: RequestOptions, rules: ModelRules, model: str
) -> list[Violation]:
    """The reasoning setting against what the model's row offers."""
    reasoning = options.reasoning
    shown = model if rules.placed else f"{model} (a model no rule row places)"
    offers = f"it takes {rules.offers()}"
    if reasoning is None:
        return []
    if reasoning == "off":
        if rules.can_turn_off:
            return []
        return [Violation(("reasoning",), f"{shown} cannot turn reasoning off: {offers}")]
    if isinstance(reasoning, int):
        if rules.budgets:
            return []
        return [
            Violation(
                ("reasoning",),
                f"a thinking budget ({reasoning} tokens) cannot be sent to {shown}: {offers}",
            )
        ]
    if reasoning in rules.levels:
        return []
    return [
        Violation(("reasoning",), f"reasoning {reasoning!r} is not offered by {shown}: {offers}")
    ]


def model_violations(
    options: RequestOptions,
    *,
    rules: ModelRules,
    model: str,
    route: str,
    ceiling: int,
) -> list[Violation]:
    """Every rule ``options`` break for ``model`` (following ``rules``) on ``route`` under
    the output ceiling ``ceiling`` (the effective ``max_output_tokens``); empty when none."""
    problems = _reasoning_violations(options, rules, model)
    reasoning_ok = not problems
    if options.reasoning_display is not None and not rules.display:
        problems.append(
            Violation(
                ("reasoning_display",),
                f"{model} has no thinking display setting (reasoning_display is for Claude "
                "models with adaptive thinking)",
            )
        )
    if _forces_a_tool(options) and not rules.forced_tool:
        problems.append(
            Violation(
                ("tool_choice",),
                f"{model} refuses a forced tool_choice ({options.tool_choice!r}), with or "
                'without thinking: use "auto" or "none"',
            )
        )
    sampled = [name for name in ("temperature", "top_p") if getattr(options, name) is not None]
    if rules.family == "anthropic":
        # API version 2026-10-21 removed the sampling parameters: any value is a 400.
        if sampled:
            problems.append(
                Violation(
                    tuple(sampled),
                    f"{' and '.join(sampled)} cannot be sent to an Anthropic model: its API "
                    "(version 2026-10-21) removed temperature, top_p and top_k and answers 400 "
                    "to any value",
                )
            )
        if thinks(options) and reasoning_ok:
            assert options.reasoning is not None
            if rules.budgets and (isinstance(options.reasoning, int) or not rules.adaptive):
                problems += _budget_violations(options.reasoning, ceiling)
            if _forces_a_tool(options):
                problems.append(
                    Violation(
                        ("reasoning", "tool_choice"),
                        f"reasoning with tool_choice {options.tool_choice!r}: Anthropic models "
                        'that think accept only tool_choice "auto" or "none" (no forced tool)',
                    )
                )
        if options.stop is not None and any(not stop.strip() for stop in options.stop):
            problems.append(
                Violation(
                    ("stop",), "stop sequences for an Anthropic model must not be whitespace only"
                )
            )
    elif sampled and not rules.sampling:
        problems.append(
            Violation(
                tuple(sampled),
                f"{' and '.join(sampled)} cannot be sent to {model}: OpenAI reasoning models take "
                'only the default sampling ("Only the default (1) value is supported")',
            )
        )
    most = ROUTE_TABLE[route].max_stop_sequences
    if most is not None and options.stop is not None and len(options.stop) > most:
        problems.append(
            Violation(
                ("stop",),
                f"{len(options.stop)} stop sequences: the {route} route takes at most {most}",
            )
        )
    return problems


def _budget_violations(reasoning: ReasoningEffort | int, ceiling: int) -> list[Violation]:
    budget = thinking_budget(reasoning, ceiling)
    assert budget is not None
    if budget < ANTHROPIC_MIN_THINKING_BUDGET:
        return [
            Violation(
                ("reasoning",),
                f"reasoning budget {budget} is below Anthropic's minimum thinking budget "
                f"of {ANTHROPIC_MIN_THINKING_BUDGET} tokens",
            )
        ]
    if budget >= ceiling:
        return [
            Violation(
                ("reasoning", "max_output_tokens"),
                f"reasoning budget {budget} must be below max_output_tokens ({ceiling}): "
                "Anthropic counts thinking inside the output ceiling",
            )
        ]
    return []


@functools.lru_cache(maxsize=256)
def decide(
    route: str,
    model: str,
    options: RequestOptions | None,
    max_tokens: int | None,
    prefixes: tuple[str, ...] = (),
) -> CallRules:
    """The rules of a call to ``model`` on ``route`` with ``options`` under the client's
    ceiling ``max_tokens``, decided once (cached per these): the ceiling asked, the model's
    family and facts the renderers branch on, the reasoning fields' values, and every rule
    the options break (`model_violations`, as reasons). ``prefixes`` are the operator's
    passthrough prefixes (a model routed by one is an Anthropic model). `RenderError` for
    a ceiling below 1."""
    asked = options.max_output_tokens if options is not None else None
    ceiling = asked if asked is not None else max_tokens
    if ceiling is not None and ceiling < 1:
        raise RenderError(f"max_tokens must be a positive number, not {ceiling}")
    rules = request_rules(model, options.like if options else None, route=route, prefixes=prefixes)
    reasoning = None if options is None else options.reasoning
    checked = DEFAULT_MAX_OUTPUT_TOKENS if ceiling is None else ceiling
    problems = (
        []
        if options is None
        else model_violations(options, rules=rules, model=model, route=route, ceiling=checked)
    )
    budget: int | None = None
    effort: str | None = None
    thinking = reasoning is not None and reasoning != "off"
    # A Claude budget, for options that keep every rule (a level the model lacks has none).
    claude = rules.family == "anthropic" and thinking and not problems
    if claude and (isinstance(reasoning, int) or not rules.adaptive):
        assert reasoning is not None
        budget = thinking_budget(reasoning, checked)
    if reasoning == "off":
        effort = "none" if rules.none_effort else None
    elif isinstance(reasoning, int):
        effort = effort_for_budget(reasoning)
    else:
        effort = reasoning
    return CallRules(
        ceiling=ceiling,
        family=rules.family,
        thinks=thinking,
        budget=budget,
        effort=effort,
        reasons=bool(rules.levels),
        structured=rules.structured,
        forced_tool=rules.forced_tool,
        problems=tuple(problem.reason for problem in problems),
    )
