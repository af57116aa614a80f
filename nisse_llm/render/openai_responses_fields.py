"""Request options -> the Responses route's fields, in wire order (pure, no I/O): the
mapping is `nisse_llm.render._options`' docstring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nisse_llm.errors import RenderError
from nisse_llm.render._options import NO_OPTIONS, answer_schema, checked

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions

__all__ = ["RESPONSES_FIELDS", "responses_fields"]

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

    opts = options or NO_OPTIONS
    if opts.stop:
        raise RenderError(
            f"stop sequences {list(opts.stop)!r} cannot be sent on the Responses route "
            f"(it has no stop field): clear them for {model!r} (stop=()) or use the chat route"
        )
    ceiling = checked(opts, model, rules, tools)
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
    schema = answer_schema(opts)
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
