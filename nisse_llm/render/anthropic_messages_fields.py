"""Request options -> the messages route's fields (pure, no I/O): the mapping is
`nisse_llm.render._options`' docstring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.render._options import NO_OPTIONS, answer_schema, checked, claude_thinking

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.anthropic_messages import AnthropicThinkingConfig, AnthropicToolChoice

__all__ = ["messages_fields"]


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

    opts = options or NO_OPTIONS
    ceiling = checked(opts, model, rules, tools)
    ceiling = DEFAULT_MAX_OUTPUT_TOKENS if ceiling is None else ceiling
    thinking: AnthropicThinkingConfig | None = None
    effort = None
    if opts.reasoning == "off":
        thinking = AnthropicThinkingConfig(type="disabled")
    elif rules.thinks and not unthought_loop:
        asked, effort = claude_thinking(opts, rules)
        thinking = AnthropicThinkingConfig(**asked)
    schema = answer_schema(opts)
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
