"""Every public render method takes a call's arguments as `CallParams` spells them, once:
the same body whichever method renders it, and the routes' differences (the messages
route's default ceiling, the Responses route's ``prompt_cache_key``) as data."""

from __future__ import annotations

import inspect

import pydantic_core
import pytest

from nisse_llm import (
    AnthropicMessagesRenderer,
    OpenAIChatRenderer,
    OpenAIResponsesRenderer,
    UserText,
)
from nisse_llm.events.canonical import DEFAULT_MAX_OUTPUT_TOKENS
from nisse_llm.render import CallParams
from nisse_llm.render._base import Renderer

LOG = [UserText(text="Name a colour.")]
ROUTES: list[tuple[type[Renderer], str]] = [
    (OpenAIChatRenderer, "gpt-5.4-mini"),
    (AnthropicMessagesRenderer, "claude-sonnet-4-5"),
    (OpenAIResponsesRenderer, "gpt-6-astra"),
]


@pytest.mark.parametrize(("renderer", "model"), ROUTES)
def test_each_public_method_shows_the_call_signature(renderer: type[Renderer], model: str) -> None:
    """``render``, ``render_bytes``, ``render_parts`` and ``render_request`` all show the
    call's own parameters (what ``help()`` and editors read), keywords after ``system``."""
    expected = list(inspect.signature(CallParams).parameters)
    for name in ("render", "render_bytes", "render_parts", "render_request"):
        shown = inspect.signature(getattr(renderer(), name)).parameters
        assert list(shown) == expected, name
        assert shown["max_tokens"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize(("renderer", "model"), ROUTES)
def test_every_method_renders_the_same_body(renderer: type[Renderer], model: str) -> None:
    """The dict, the bytes, the parts and the typed request of one call are one body."""
    r = renderer()
    body = r.render_bytes(LOG, None, model, "Be brief.", max_tokens=200)
    assert b"".join(r.render_parts(LOG, None, model, "Be brief.", max_tokens=200)) == body
    assert r.render(LOG, None, model, "Be brief.", max_tokens=200) == pydantic_core.from_json(body)
    typed = r.render_request(LOG, None, model, "Be brief.", max_tokens=200)  # type: ignore[attr-defined]
    assert typed.model_dump_json(exclude_none=True).encode() == body


def test_the_messages_route_sends_its_default_ceiling() -> None:
    """A messages call naming no ceiling sends the default one (the route must send one),
    the same as naming it."""
    r = AnthropicMessagesRenderer()
    body = r.render(LOG, None, "claude-sonnet-4-5")
    assert body["max_tokens"] == DEFAULT_MAX_OUTPUT_TOKENS
    named = r.render(LOG, None, "claude-sonnet-4-5", max_tokens=DEFAULT_MAX_OUTPUT_TOKENS)
    assert body == named


def test_only_the_responses_route_takes_a_prompt_cache_key() -> None:
    """The Responses route sends the key it is given; the others refuse one."""
    body = OpenAIResponsesRenderer().render(LOG, None, "gpt-6-astra", prompt_cache_key="k-1")
    assert body["prompt_cache_key"] == "k-1"
    for renderer, model in ROUTES[:2]:
        with pytest.raises(TypeError, match="prompt_cache_key"):
            renderer().render_bytes(LOG, None, model, prompt_cache_key="k-1")
