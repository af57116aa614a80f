"""Request options -> the chat route's fields, in wire order (pure, no I/O): the mapping
is `nisse_llm.render._options`' docstring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.render._options import NO_OPTIONS, answer_schema, checked, claude_thinking

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.openai_chat import OpenAIChatNamedToolChoice

__all__ = ["CHAT_FIELDS", "chat_fields"]

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
    opts = options or NO_OPTIONS
    ceiling = checked(opts, model, rules, tools)
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

            asked, effort = claude_thinking(opts, rules)
            fields["thinking"] = OpenAIChatThinking(**asked)
            if effort is not None:
                fields["output_config"] = OpenAIChatOutputConfig(effort=effort)
        if answer_schema(opts) is not None:
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
    schema = answer_schema(opts)
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
