"""Request options -> the fields of each route's request body (pure, no I/O).

Each route's field encoder (`anthropic_messages_fields`, `openai_chat_fields`,
`openai_responses_fields`) maps everything `RequestOptions` sets: the output ceiling,
reasoning, sampling, stop sequences and tool choice. The rules a combination must keep
are `nisse_llm.config.option_rules`' (each cites its provider documentation), decided once
per call into the `CallRules` value they read (``rules=``): they never consult the rule
tables themselves. This module holds what the encoders share. A broken rule is a `RenderError` naming the options and the rule,
raised before anything is sent.

Mapping (the "Request options" guide's table, docs/guides/options.md, says the same):

- ``max_output_tokens``: ``max_tokens`` on both routes; it wins over the client's default.
- ``reasoning``: as the model's row in `nisse_llm.config.model_rules` says. A Claude model that
  takes adaptive thinking gets ``thinking: {type: adaptive}`` with ``output_config:
  {effort: LEVEL}``, the level asked as is (and ``display`` from ``reasoning_display``);
  one that takes budgets gets ``thinking: {type: enabled, budget_tokens}`` (a level becomes
  `EFFORT_BUDGETS`' budget, capped at half the ceiling). Both routes send the same fields:
  LiteLLM forwards them as sent on the chat route, where its own mapping of
  ``reasoning_effort`` would re-map the level or the budget. ``"off"`` is ``thinking:
  {type: disabled}`` on the messages route and nothing on the chat route (the proxy drops
  it there). An OpenAI model gets ``reasoning_effort`` at the level asked; ``"off"`` is
  ``"none"`` where the model has it, else nothing; a budget (unplaced models only) becomes
  a level (`effort_for_budget`). Thinking is
  left out of a request that continues a tool loop whose last assistant turn carries no
  thinking block of the request model (it was made without thinking, or by another model):
  Anthropic refuses that pair ("When thinking is enabled, a final assistant message must
  start with a thinking block"); the rules are still checked, and the next turn thinks.
  The chat route then replays no earlier turn's thinking blocks either.
- A structured answer asked natively (`AnswerOptions`, from ``complete_as``):
  ``output_config.format`` on the messages route, a strict ``response_format`` on the chat
  route (OpenAI models only).
- ``temperature``, ``top_p``: sent to OpenAI models only (the chat route); refused for
  Anthropic models on either route.
- ``stop``: ``stop`` on the chat route, ``stop_sequences`` on the messages route; an empty
  list sends nothing (a call can clear a profile's sequences with ``stop=()``).
- ``tool_choice``: chat ``"auto"``/``"none"``/``"required"`` or ``{type: function, function:
  {name}}``; messages ``{type: auto|none|any|tool}``. With no tools passed, ``"auto"`` and
  ``"none"`` send nothing (a log with calls still gets its stub tools and ``none``).
- The Responses route (`responses_fields`) takes the chat route's rules with its own
  field names: ``max_output_tokens``; ``reasoning: {effort: LEVEL, summary: "auto"}`` (the
  summary lets the agent read what the model thought; ``"off"`` is effort ``"none"`` where
  the model has it, else nothing; a budget becomes a level); sampling as on the chat
  route; ``tool_choice`` ``"auto"``/``"none"``/``"required"`` or ``{type: function,
  name}``; ``text.format`` (a strict JSON Schema) for a structured answer; ``stop`` is
  refused (the route has no stop sequences). ``include: ["reasoning.encrypted_content"]``
  is asked of every model that reasons, so its reasoning can be carried to the next turn.
- ``parallel_tool_calls``: chat and Responses ``parallel_tool_calls``; messages
  ``disable_parallel_tool_use`` (its negation) inside ``tool_choice`` (``auto`` when no
  choice is set). Sent only with tools passed and a choice other than ``none``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from nisse_llm.errors import RenderError
from nisse_llm.render._walk import encode_model, json_bytes

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions

__all__ = [
    "NO_OPTIONS",
    "answer_schema",
    "checked",
    "claude_thinking",
    "encode_fields",
    "tool_problems",
]


class _NoOptions:
    """Every option unset, as ``RequestOptions()`` reads: what a call without options uses,
    so a first request need not load the options model (a test holds it to the model's
    fields)."""

    __slots__ = ()
    max_output_tokens = reasoning = reasoning_display = temperature = top_p = stop = None
    tool_choice = parallel_tool_calls = like = None


NO_OPTIONS = cast("RequestOptions", _NoOptions())


def checked(opts: RequestOptions, model: str, rules: CallRules, tools: Sequence[str]) -> int | None:
    """The ceiling asked (None: none, so the provider's or client's default applies), once
    the options keep every rule the call's ``rules`` name and their tool choice names a
    tool the request passes (else `RenderError`, naming the options and the rules broken)."""
    problems = [*rules.problems, *tool_problems(opts, tools)]
    if problems:
        shown = opts.model_dump(exclude_none=True, mode="json")
        raise RenderError(
            f"request options {shown} cannot be sent to {model!r}: " + "; ".join(problems)
        )
    return rules.ceiling


def tool_problems(options: RequestOptions, tools: Sequence[str]) -> list[str]:
    """What ``options.tool_choice`` asks that a request offering ``tools`` (names) lacks."""
    choice = options.tool_choice
    if choice is None or choice in ("auto", "none"):
        return []
    if not tools:
        return [f"tool_choice {choice!r} needs tools, and the request passes none"]
    if choice != "required" and choice not in tools:
        return [
            f"tool_choice {choice!r} names no tool of the request (it passes "
            f"{', '.join(map(repr, tools))})"
        ]
    return []


def answer_schema(opts: RequestOptions) -> dict[str, Any] | None:
    """The JSON Schema a structured answer must follow, when ``complete_as`` asks natively
    (an `AnswerOptions`; read by name, so a call without it never loads the options model)."""
    schema: dict[str, Any] | None = getattr(opts, "answer_schema", None)
    return schema


def claude_thinking(opts: RequestOptions, rules: CallRules) -> tuple[dict[str, Any], str | None]:
    """The ``thinking`` fields and the ``output_config.effort`` for a Claude model that
    thinks: adaptive at the level asked where the model takes it, else the budget decided
    (the level's, or the one asked). Both routes send them alike (LiteLLM forwards them as
    sent on the chat route)."""
    display = {} if opts.reasoning_display is None else {"display": opts.reasoning_display}
    if rules.budget is None:
        assert isinstance(opts.reasoning, str)
        return {"type": "adaptive", **display}, opts.reasoning
    return {"type": "enabled", "budget_tokens": rules.budget, **display}, None


def encode_fields(fields: dict[str, Any]) -> list[bytes]:
    """``,"name":value`` per field of `chat_fields` or `responses_fields`, as the typed
    request dumps it (``exclude_none``): the byte path's tail."""
    return [
        b',"'
        + name.encode()
        + b'":'
        + (encode_model(value) if isinstance(value, BaseModel) else json_bytes(value))
        for name, value in fields.items()
    ]
