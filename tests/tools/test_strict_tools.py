"""Strict tools: a `Toolbox` marks each tool whose schema fits strict mode as it is, the
OpenAI routes and the messages route send those ``strict: true`` to models that take it, a tool that does not fit
is sent as before and says why at DEBUG, and ``Toolbox(..., strict=False)`` opts out."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from nisse_llm import (
    AnthropicMessagesRenderer,
    OpenAIChatRenderer,
    OpenAIResponsesRenderer,
    Toolbox,
    UserText,
)
from nisse_llm.events.tools import strict_problem

LOG = [UserText(text="Tidy a.py.")]


def read_file(path: str) -> str:
    """Read a file."""
    return path


def grep(pattern: str, limit: int = 10) -> str:
    """Search the files."""
    return pattern


def _tools(body: dict[str, Any]) -> dict[str, Any]:
    return {
        (tool.get("function") or tool)["name"]: (tool.get("function") or tool)
        for tool in body["tools"]
    }


def test_a_toolbox_marks_the_tools_whose_schema_fits_strict_mode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every parameter required: strict; an optional one: not, and the DEBUG log says why."""
    with caplog.at_level(logging.DEBUG, logger="nisse_llm"):
        box = Toolbox([read_file, grep])
    assert [spec.strict for spec in box.specs] == [True, False]
    (said,) = [r.getMessage() for r in caplog.records if "not sent strict" in r.getMessage()]
    assert "'grep'" in said
    assert "optional parameters (limit)" in said
    assert strict_problem(box.specs[0].parameters) is None


def test_strict_false_opts_out() -> None:
    """``Toolbox(..., strict=False)`` marks no tool, so every route sends them as before."""
    box = Toolbox([read_file], strict=False)
    assert [spec.strict for spec in box.specs] == [False]
    body = OpenAIResponsesRenderer().render(LOG, box, "gpt-6-astra")
    assert _tools(body)["read_file"]["strict"] is False


@pytest.mark.parametrize("model", ["gpt-6-astra", "gpt-5.4-mini"])
def test_the_responses_route_sends_fitting_tools_strict(model: str) -> None:
    """On the Responses route, to a model with native structured outputs, the fitting tool
    is ``strict: true`` and the other ``strict: false``, schemas unchanged."""
    box = Toolbox([read_file, grep])
    body = OpenAIResponsesRenderer().render(LOG, box, model)
    sent = _tools(body)
    assert (sent["read_file"]["strict"], sent["grep"]["strict"]) == (True, False)
    assert sent["read_file"]["parameters"] == box.specs[0].parameters
    raw = json.loads(OpenAIResponsesRenderer().render_bytes(LOG, box, model))
    assert _tools(raw)["read_file"]["strict"] is True


def test_the_chat_route_sends_fitting_tools_strict_to_openai_models() -> None:
    """On the chat route an OpenAI model gets ``strict: true`` on the fitting tool only."""
    body = OpenAIChatRenderer().render(LOG, Toolbox([read_file, grep]), "gpt-5.4-mini")
    sent = _tools(body)
    assert sent["read_file"]["strict"] is True
    assert "strict" not in sent["grep"]


def test_the_messages_route_sends_fitting_tools_strict_to_claude_models() -> None:
    """A Claude model with structured outputs gets ``strict: true`` on the fitting tool
    only, in the typed body and the bytes; ``Toolbox(..., strict=False)`` opts out."""
    box = Toolbox([read_file, grep])
    sent = _tools(AnthropicMessagesRenderer().render(LOG, box, "claude-opus-5-5"))
    assert sent["read_file"]["strict"] is True
    assert sent["read_file"]["input_schema"] == box.specs[0].parameters
    assert "strict" not in sent["grep"]
    raw = json.loads(AnthropicMessagesRenderer().render_bytes(LOG, box, "claude-opus-5-5"))
    assert _tools(raw)["read_file"]["strict"] is True
    assert "strict" not in _tools(raw)["grep"]
    loose = Toolbox([read_file], strict=False)
    body = AnthropicMessagesRenderer().render_bytes(LOG, loose, "claude-opus-5-5")
    assert "strict" not in _tools(json.loads(body))["read_file"]


@pytest.mark.parametrize(
    ("renderer", "model"),
    [
        (OpenAIResponsesRenderer, "scripted-executor"),
        (OpenAIChatRenderer, "scripted-executor"),
        (OpenAIChatRenderer, "claude-opus-5-5"),
        (AnthropicMessagesRenderer, "scripted-planner"),
    ],
)
def test_models_without_strict_tools_get_them_as_before(renderer: Any, model: str) -> None:
    """A model whose rules know no structured outputs, or a Claude model on the chat route
    (not measured through the proxy), gets no strict tool (``strict: false`` where the
    route requires the field)."""
    body = renderer().render(LOG, Toolbox([read_file]), model)
    sent = _tools(body)["read_file"]
    assert sent.get("strict") in (None, False)
