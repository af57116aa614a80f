"""Properties of the chat renderer over arbitrary valid logs (tests.strategies)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import CanonicalEvent, ToolSpec
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.render.openai_checker import check_against_log, check_chat_body
from tests.render.test_openai_official import judge_official, judge_schema
from tests.strategies import logs, texts, tool_specs

CHAT = OpenAIChatRenderer()
MODEL = "gpt-4o-mini"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _typed(
    events: list[CanonicalEvent], tools: list[ToolSpec], system: str | None, max_tokens: int | None
) -> bytes:
    request = CHAT.render_request(events, tools, MODEL, system, max_tokens=max_tokens)
    return request.model_dump_json(exclude_none=True).encode()


@SETTINGS
@given(logs(), tool_specs(), st.none() | texts, st.none() | st.integers(1, 100_000))
def test_any_valid_log_renders_a_body_that_passes_every_judge(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    system: str | None,
    max_tokens: int | None,
) -> None:
    """Any valid log renders to a body that keeps the pairing rules, loses nothing and is valid."""
    encoded = CHAT.render_bytes(events, tools, MODEL, system, max_tokens=max_tokens)
    body = json.loads(encoded)
    check_chat_body(body)
    check_against_log(body, events, system)
    judge_official(body)
    judge_schema(body)


@SETTINGS
@given(logs(), tool_specs(), st.none() | texts, st.none() | st.integers(1, 100_000))
def test_render_bytes_is_the_typed_dump_for_any_log(
    events: list[CanonicalEvent],
    tools: list[ToolSpec],
    system: str | None,
    max_tokens: int | None,
) -> None:
    """For any valid log the memoised bytes equal the typed request's dump, first and again."""
    expected = _typed(events, tools, system, max_tokens)
    for _ in range(2):
        assert CHAT.render_bytes(events, tools, MODEL, system, max_tokens=max_tokens) == expected


@SETTINGS
@given(logs(max_steps=15), tool_specs())
def test_a_log_rendered_as_it_grows_matches_rendering_from_scratch(
    events: list[CanonicalEvent], tools: list[ToolSpec]
) -> None:
    """Rendering each prefix in turn (resuming from cached progress) equals the typed path."""
    for end in range(1, len(events) + 1):
        prefix = events[:end]
        try:
            expected: bytes | str = _typed(prefix, tools, None, None)
        except RenderError as exc:
            expected = str(exc)
        try:
            got: bytes | str = CHAT.render_bytes(prefix, tools, MODEL)
        except RenderError as exc:
            got = str(exc)
        assert got == expected
