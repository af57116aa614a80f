"""Properties of the messages renderer over arbitrary valid logs (shared hypothesis strategies)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import CanonicalEvent, ToolSpec
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from tests.render.anthropic_checker import (
    anthropic_log_violations,
    anthropic_violations,
    official_violations,
)
from tests.strategies import MODELS, logs, tool_specs

ANT = AnthropicMessagesRenderer()
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(logs(), tool_specs(), st.sampled_from(MODELS), st.none() | st.text(max_size=30))
def test_every_valid_log_renders_to_a_body_the_api_accepts(
    events: list[CanonicalEvent], tools: list[ToolSpec], model: str, system: str | None
) -> None:
    """Any valid log keeps every API rule, loses nothing, and validates against the official type."""
    body = ANT.render(events, tools, model, system)
    assert anthropic_violations(body) == []
    assert anthropic_log_violations(body, events, model) == []
    assert official_violations(body) == []


@PROPERTY
@given(logs(), tool_specs(), st.sampled_from(MODELS), st.none() | st.text(max_size=30))
def test_render_bytes_equal_the_typed_dump(
    events: list[CanonicalEvent], tools: list[ToolSpec], model: str, system: str | None
) -> None:
    """For any valid log the byte path equals the typed request's exclude_none dump."""
    typed = ANT.render_request(events, tools, model, system).model_dump_json(exclude_none=True)
    assert ANT.render_bytes(events, tools, model, system) == typed.encode()


@PROPERTY
@given(logs(max_steps=30), st.data())
def test_growing_a_log_renders_as_if_from_scratch(
    events: list[CanonicalEvent], data: st.DataObject
) -> None:
    """Rendering each prefix in turn (resuming cached plans) gives the same bytes as a cold render."""
    model = data.draw(st.sampled_from(MODELS))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=4)) | {len(events)})
    warm: list[bytes] = []
    for cut in cuts:
        try:
            warm.append(ANT.render_bytes(events[:cut], None, model))
        except RenderError:
            warm.append(b"")
    ANT.forget()
    for cut, expected in zip(cuts, warm, strict=True):
        try:
            cold = ANT.render_bytes(list(events[:cut]), None, model)
        except RenderError:
            cold = b""
        assert cold == expected
