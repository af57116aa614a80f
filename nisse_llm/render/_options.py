"""Request options -> the fields of each route's request body (pure, no I/O).

Both renderers call this module for everything `RequestOptions` sets: the output ceiling,
reasoning, sampling, stop sequences and tool choice. The rules a combination must keep
are `nisse_llm.config.option_rules`' (each cites its provider documentation), decided once
per call into the `CallRules` value this module reads (``rules=``): it never consults the
rule tables itself. A broken rule is a `RenderError` naming the options and the rule,
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
from nisse_llm.log.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.render._walk import encode_model, json_bytes

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.anthropic_messages import (
        AnthropicThinkingConfig,
        AnthropicToolChoice,
    )
    from nisse_llm.wire.openai_chat import OpenAIChatNamedToolChoice

__all__ = [
    "chat_fields",
    "encode_fields",
    "messages_fields",
    "responses_fields",
]


class _NoOptions:
    """Every option unset, as ``RequestOptions()`` reads: what a call without options uses,
    so a first request need not load the options model (a test holds it to the model's
    fields)."""

    __slots__ = ()
    max_output_tokens = reasoning = reasoning_display = temperature = top_p = stop = None
    tool_choice = parallel_tool_calls = like = None


_NO_OPTIONS = cast("RequestOptions", _NoOptions())
#: The chat request's fields this module sets, in wire order (the byte path relies on it;
#: a test holds it to `OpenAIChatRequest`'s field order). The wire models load only when
#: an option needs one, so a request without options never builds them.
CHAT_FIELDS: tuple[str, ...] = (
    "tool_choice",
    "max_tokens",
    "parallel_tool_calls",
    "stop",
    "temperature",
    "top_p",
    "reasoning_effort",
    "thinking",
    "output_config",
    "response_format",
)


def _checked(
    opts: RequestOptions, model: str, rules: CallRules, tools: Sequence[str]
) -> int | None:
    """The ceiling asked (None: none, so the provider's or client's default applies), once
    the options keep every rule the call's ``rules`` name and their tool choice names a
    tool the request passes (else `RenderError`, naming the options and the rules broken)."""
    problems = [*rules.problems, *_tool_problems(opts, tools)]
    if problems:
        shown = opts.model_dump(exclude_none=True, mode="json")
        raise RenderError(
            f"request options {shown} cannot be sent to {model!r}: " + "; ".join(problems)
        )
    return rules.ceiling


def _tool_problems(options: RequestOptions, tools: Sequence[str]) -> list[str]:
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


def messages_fields(
    options: RequestOptions | None,
    *,
    model: str,
    rules: CallRules,
    tools: Sequence[str],
    stubbed: bool,
    unthought_loop: bool = False,
) -> dict[str, Any]:
    """The messages route's fields for ``options``, unset ones as None (`RenderError` for
    a broken rule); ``max_tokens`` is always set.

    ``rules`` are the call's, decided (their ceiling is the client's default's or the
    options'), ``tools`` the names of the tools the
    caller passed (none when ``stubbed``: the request declares stubs for the log's calls).
    ``unthought_loop``: the request continues a tool loop whose last assistant turn has no
    thinking of this model, so thinking is left out of it (module docstring).
    Every model on this route is served by Anthropic's API.
    """
    from nisse_llm.wire.anthropic_messages import (
        AnthropicOutputConfig,
        AnthropicThinkingConfig,
        AnthropicToolChoiceNone,
    )

    opts = options or _NO_OPTIONS
    ceiling = _checked(opts, model, rules, tools)
    ceiling = DEFAULT_MAX_OUTPUT_TOKENS if ceiling is None else ceiling
    thinking: AnthropicThinkingConfig | None = None
    effort = None
    if opts.reasoning == "off":
        thinking = AnthropicThinkingConfig(type="disabled")
    elif rules.thinks and not unthought_loop:
        asked, effort = _claude_thinking(opts, rules)
        thinking = AnthropicThinkingConfig(**asked)
    schema = _answer_schema(opts)
    output_config = None
    if effort is not None or schema is not None:
        output_config = AnthropicOutputConfig(
            effort=effort,
            format=None if schema is None else {"type": "json_schema", "schema": schema},
        )
    return {
        "max_tokens": ceiling,
        "tool_choice": AnthropicToolChoiceNone() if stubbed else _anthropic_choice(opts, tools),
        "thinking": thinking,
        "output_config": output_config,
        "stop_sequences": list(opts.stop) if opts.stop else None,
    }


def _answer_schema(opts: RequestOptions) -> dict[str, Any] | None:
    """The JSON Schema a structured answer must follow, when ``complete_as`` asks natively
    (an `AnswerOptions`; read by name, so a call without it never loads the options model)."""
    schema: dict[str, Any] | None = getattr(opts, "answer_schema", None)
    return schema


def _claude_thinking(opts: RequestOptions, rules: CallRules) -> tuple[dict[str, Any], str | None]:
    """The ``thinking`` fields and the ``output_config.effort`` for a Claude model that
    thinks: adaptive at the level asked where the model takes it, else the budget decided
    (the level's, or the one asked). Both routes send them alike (LiteLLM forwards them as
    sent on the chat route)."""
    display = {} if opts.reasoning_display is None else {"display": opts.reasoning_display}
    if rules.budget is None:
        assert isinstance(opts.reasoning, str)
        return {"type": "adaptive", **display}, opts.reasoning
    return {"type": "enabled", "budget_tokens": rules.budget, **display}, None


def _anthropic_choice(opts: RequestOptions, tools: Sequence[str]) -> AnthropicToolChoice | None:
    from nisse_llm.wire.anthropic_messages import (
        AnthropicToolChoiceAny,
        AnthropicToolChoiceAuto,
        AnthropicToolChoiceNone,
        AnthropicToolChoiceTool,
    )

    choice, parallel = opts.tool_choice, opts.parallel_tool_calls
    if not tools:
        return None
    if choice == "none":
        return AnthropicToolChoiceNone()
    disable = None if parallel is None else not parallel
    if choice == "required":
        return AnthropicToolChoiceAny(disable_parallel_tool_use=disable)
    if choice is not None and choice != "auto":
        return AnthropicToolChoiceTool(name=choice, disable_parallel_tool_use=disable)
    if choice is None and parallel is None:
        return None
    return AnthropicToolChoiceAuto(disable_parallel_tool_use=disable)


def chat_fields(
    options: RequestOptions | None,
    *,
    model: str,
    rules: CallRules,
    tools: Sequence[str],
    stubbed: bool,
    unthought_loop: bool = False,
) -> dict[str, Any]:
    """The chat route's fields for ``options``, in wire order, unset ones left out
    (`RenderError` for a broken rule); ``rules`` and ``unthought_loop`` as for
    `messages_fields` (the latter for Anthropic models only)."""
    opts = options or _NO_OPTIONS
    ceiling = _checked(opts, model, rules, tools)
    fields: dict[str, Any] = {}
    choice = opts.tool_choice
    if stubbed:
        fields["tool_choice"] = "none"
    elif tools and choice is not None:
        fields["tool_choice"] = choice if choice in ("auto", "none", "required") else _named(choice)
    if rules.family == "anthropic":
        # "off" sends nothing: the proxy drops ``thinking: {type: disabled}`` on this route.
        if rules.thinks and not unthought_loop:
            if ceiling is None:  # a budget is checked against this ceiling: send it
                ceiling = DEFAULT_MAX_OUTPUT_TOKENS
            from nisse_llm.wire.openai_chat import OpenAIChatOutputConfig, OpenAIChatThinking

            asked, effort = _claude_thinking(opts, rules)
            fields["thinking"] = OpenAIChatThinking(**asked)
            if effort is not None:
                fields["output_config"] = OpenAIChatOutputConfig(effort=effort)
        if _answer_schema(opts) is not None:
            raise RenderError(
                f"a structured answer cannot be asked of {model} natively on the chat route "
                "(the proxy turns response_format into a field Anthropic does not know): "
                "use the messages route"
            )
    else:
        fields["reasoning_effort"] = rules.effort
    if ceiling is not None:
        fields["max_tokens"] = ceiling
    if tools and choice != "none" and opts.parallel_tool_calls is not None:
        fields["parallel_tool_calls"] = opts.parallel_tool_calls
    if opts.stop:
        fields["stop"] = list(opts.stop)
    fields["temperature"] = opts.temperature
    fields["top_p"] = opts.top_p
    fields["response_format"] = _response_format(opts)
    return {name: fields[name] for name in CHAT_FIELDS if fields.get(name) is not None}


def _response_format(opts: RequestOptions) -> Any:
    schema = _answer_schema(opts)
    if schema is None:
        return None
    from nisse_llm.wire.openai_chat import OpenAIChatResponseFormat

    name: str = getattr(opts, "answer_name")  # noqa: B009 (an AnswerOptions, by name)
    return OpenAIChatResponseFormat(json_schema={"name": name, "schema": schema, "strict": True})


def _named(tool: str) -> OpenAIChatNamedToolChoice:
    from nisse_llm.wire.openai_chat import (
        OpenAIChatNamedToolChoice,
        OpenAIChatNamedToolChoiceFunction,
    )

    return OpenAIChatNamedToolChoice(function=OpenAIChatNamedToolChoiceFunction(name=tool))


#: The Responses request's fields `responses_fields` sets, in wire order.
RESPONSES_FIELDS: tuple[str, ...] = (
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "temperature",
    "top_p",
    "reasoning",
    "text",
    "prompt_cache_key",
    "include",
)


def responses_fields(
    options: RequestOptions | None,
    *,
    model: str,
    rules: CallRules,
    tools: Sequence[str],
    stubbed: bool,
    prompt_cache_key: str | None = None,
) -> dict[str, Any]:
    """The Responses route's fields for ``options``, in wire order, unset ones left out
    (`RenderError` for a broken rule or for stop sequences, which the route lacks);
    ``rules`` as for `messages_fields`.
    ``prompt_cache_key`` is sent to OpenAI models only (the proxy refuses it for others)."""
    from nisse_llm.wire.openai_responses import (
        OpenAIResponsesNamedToolChoice,
        OpenAIResponsesReasoning,
        OpenAIResponsesTextConfig,
    )

    opts = options or _NO_OPTIONS
    if opts.stop:
        raise RenderError(
            f"stop sequences {list(opts.stop)!r} cannot be sent on the Responses route "
            f"(it has no stop field): clear them for {model!r} (stop=()) or use the chat route"
        )
    ceiling = _checked(opts, model, rules, tools)
    fields: dict[str, Any] = {}
    choice = opts.tool_choice
    if stubbed:
        fields["tool_choice"] = "none"
    elif tools and choice is not None:
        fields["tool_choice"] = (
            choice
            if choice in ("auto", "none", "required")
            else OpenAIResponsesNamedToolChoice(name=choice)
        )
    if tools and choice != "none" and opts.parallel_tool_calls is not None:
        fields["parallel_tool_calls"] = opts.parallel_tool_calls
    fields["max_output_tokens"] = ceiling
    fields["temperature"] = opts.temperature
    fields["top_p"] = opts.top_p
    effort = rules.effort
    if effort is not None:
        summary = None if effort == "none" else "auto"
        fields["reasoning"] = OpenAIResponsesReasoning(effort=effort, summary=summary)
    schema = _answer_schema(opts)
    if schema is not None:
        if rules.family == "anthropic" or not rules.structured:
            raise RenderError(
                f"a structured answer cannot be asked of {model} natively on the Responses "
                "route: use the messages route for Claude models"
            )
        name: str = getattr(opts, "answer_name")  # noqa: B009 (an AnswerOptions, by name)
        fields["text"] = OpenAIResponsesTextConfig(
            format={"type": "json_schema", "name": name, "schema": schema, "strict": True}
        )
    if rules.family == "openai":
        fields["prompt_cache_key"] = prompt_cache_key
    if rules.reasons:
        fields["include"] = ["reasoning.encrypted_content"]
    return {name: fields[name] for name in RESPONSES_FIELDS if fields.get(name) is not None}


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
