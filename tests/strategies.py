"""Hypothesis strategies for arbitrary valid canonical logs and tool specs, shared by both routes.

A valid log is one the canonical model allows and an agent can write: call ids are
unique, every `ToolResult` answers exactly one earlier `ToolCall` (results may arrive in
any order, interleaved with anything), calls may stay unanswered (an interrupted turn),
text may be empty or whitespace, and reasoning blocks come from several models. Every
log from `logs()` holds at least one renderable event (non-blank text or a call), so a
renderer must accept it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)

__all__ = [
    "MODELS",
    "TOOL_NAMES",
    "arguments",
    "json_values",
    "logs",
    "reasoning_blocks",
    "texts",
    "tool_specs",
]

#: Models named by events; the first two are the corpus models, so same-model replay happens.
MODELS = ("claude-sonnet-4-5", "claude-opus-4-1", "gpt-4o-mini", "openrouter/x-ai/grok-4")
#: Tool names shared by `logs()` and `tool_specs()`, so logs often call a declared tool.
TOOL_NAMES = ("read_file", "run_tests", "edit_file", "search")

_KINDS = ("user", "assistant", "call", "call", "result", "result", "reasoning")

tool_names = st.one_of(
    st.sampled_from(TOOL_NAMES), st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True)
)

#: Any text an event may carry: arbitrary unicode, blank strings, JSON-looking text.
texts = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["", " ", "   \n\t", "\n", "{}", '{"a": 1}', "null", "\u2028"]),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=200),
)

#: Any JSON value (floats finite, integers within 64 bits).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)

#: A tool call's arguments: always a JSON object.
arguments = st.dictionaries(st.text(max_size=12), json_values, max_size=5)

#: Verbatim provider reasoning blocks of every shape the canonical log stores.
reasoning_blocks = st.one_of(
    st.builds(
        lambda thinking, signature: {
            "type": "thinking",
            "thinking": thinking,
            "signature": signature,
        },
        st.text(max_size=80),
        st.from_regex(r"[A-Za-z0-9+/=]{8,60}", fullmatch=True),
    ),
    st.builds(
        lambda data: {"type": "redacted_thinking", "data": data},
        st.from_regex(r"[A-Za-z0-9+/=]{8,60}", fullmatch=True),
    ),
    st.builds(
        lambda text: {"type": "reasoning_content", "reasoning_content": text},
        st.text(max_size=80),
    ),
)


def _has_renderable(events: list[CanonicalEvent]) -> bool:
    return any(
        isinstance(event, ToolCall)
        or (isinstance(event, UserText | AssistantText) and event.text.strip())
        for event in events
    )


@st.composite
def logs(draw: st.DrawFn, *, max_steps: int = 25) -> list[CanonicalEvent]:
    """An arbitrary valid canonical log of up to ``max_steps`` events (plus one, rarely)."""
    kinds = draw(st.lists(st.sampled_from(_KINDS), min_size=1, max_size=max_steps))
    events: list[CanonicalEvent] = []
    open_calls: list[str] = []
    for number, kind in enumerate(kinds):
        if kind == "user":
            events.append(UserText(text=draw(texts)))
        elif kind == "assistant":
            events.append(AssistantText(text=draw(texts), model=draw(st.sampled_from(MODELS))))
        elif kind == "reasoning":
            events.append(
                Reasoning(
                    model=draw(st.sampled_from(MODELS)),
                    response_model=draw(st.none() | st.sampled_from(MODELS)),
                    block=draw(reasoning_blocks),
                )
            )
        elif kind == "call":
            # The numeric suffix after the last "-" makes every id unique within the log.
            prefix = draw(st.from_regex(r"[A-Za-z0-9_-]{1,30}", fullmatch=True))
            call_id = f"{prefix}-{number}"
            open_calls.append(call_id)
            events.append(
                ToolCall(call_id=call_id, tool=draw(tool_names), arguments=draw(arguments))
            )
        elif open_calls:
            call_id = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
            events.append(
                ToolResult(call_id=call_id, output=draw(texts), is_error=draw(st.booleans()))
            )
    if not _has_renderable(events):
        events.append(UserText(text=draw(texts.filter(str.strip))))
    return events


def _spec(name: str, description: str, parameters: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name=name, description=description, parameters=parameters)


_schemas = st.one_of(
    st.just({"type": "object", "properties": {}}),
    st.builds(
        lambda names: {
            "type": "object",
            "properties": {name: {"type": "string"} for name in names},
            "required": sorted(names)[:1],
        },
        st.lists(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), max_size=4, unique=True),
    ),
    st.just(
        {
            "type": "object",
            "$defs": {"n": {"type": "integer", "minimum": 0}},
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
        }
    ),
)


def tool_specs(*, max_size: int = 4) -> st.SearchStrategy[list[ToolSpec]]:
    """A list of tool specs with unique names (possibly empty)."""
    return st.lists(
        st.builds(_spec, tool_names, st.text(max_size=40), _schemas),
        max_size=max_size,
        unique_by=lambda spec: spec.name,
    )
