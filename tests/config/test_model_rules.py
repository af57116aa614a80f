"""The model rule table: it covers every model the pinned official SDKs list, and each rule
it states is what a request sends, or a refusal that names the model and what it takes."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.model_param import ModelParam
from openai.types.shared.chat_model import ChatModel

from nisse_llm.config.model_rules import MODEL_RULES, placed_rules, rules_for
from nisse_llm.config.options import RequestOptions
from nisse_llm.config.settings import load_settings
from nisse_llm.errors import ConfigError, RenderError
from nisse_llm.events.canonical import UserText
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.config.helpers import COMPLETE, write_config
from tests.corpus import READ_FILE

LOG = [UserText(text="Fix the failing test.")]


def _sdk_models() -> list[str]:
    """Every model name the pinned SDKs' model types list."""
    (claude_names, _str) = typing.get_args(ModelParam)
    return [*typing.get_args(claude_names), *typing.get_args(ChatModel)]


@pytest.mark.parametrize("model", _sdk_models())
def test_every_model_the_sdks_list_has_a_row(model: str) -> None:
    """A model the pinned SDKs list falls under a placed row of its own family."""
    row = placed_rules(model)
    assert row is not None, f"{model}: no row in nisse_llm.config.model_rules.MODEL_RULES"
    assert row.family == ("anthropic" if model.startswith("claude-") else "openai")


def test_every_row_cites_its_sources_and_names_are_unique() -> None:
    """Each row says where its facts come from, and no name stands in two rows."""
    names = [name for row in MODEL_RULES for name in row.names]
    assert len(names) == len(set(names))
    for row in MODEL_RULES:
        assert row.sources
        assert set(row.sources) <= {"sdk", "docs", "proxy"}


@pytest.mark.parametrize(
    ("model", "covered_by"),
    [
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("anthropic/claude-sonnet-5-5", "claude-sonnet-5-5"),
        ("openai/gpt-5.4-mini", "gpt-5.4"),
        ("gpt-5-mini", "gpt-5"),
        ("o4-mini-2025-04-16", "o4-mini"),
    ],
)
def test_a_name_with_a_suffix_or_provider_path_takes_its_rows_rules(
    model: str, covered_by: str
) -> None:
    """Dated names, sizes and LiteLLM provider paths fall under the longest row name."""
    assert placed_rules(model) is placed_rules(covered_by)


def test_a_model_no_row_places_keeps_its_familys_unplaced_rules() -> None:
    """A made-up name is not placed; it gets the family's fallback."""
    assert placed_rules("claude-scripted") is None
    assert not rules_for("claude-scripted", "anthropic").placed
    assert not rules_for("team-planner", "openai").placed


def _messages(model: str, options: RequestOptions) -> dict[str, Any]:
    return AnthropicMessagesRenderer().render(LOG, [READ_FILE], model, options=options)


def _chat(model: str, options: RequestOptions) -> dict[str, Any]:
    return OpenAIChatRenderer().render(LOG, [READ_FILE], model, options=options)


@pytest.mark.parametrize("level", ["low", "medium", "high", "xhigh", "max"])
@pytest.mark.parametrize("route", ["messages", "chat"])
def test_an_adaptive_claude_model_gets_the_level_asked(level: str, route: str) -> None:
    """claude-opus-5-5 gets adaptive thinking at exactly the level asked, on both routes."""
    render = _messages if route == "messages" else _chat
    body = render("claude-opus-5-5", RequestOptions(reasoning=level))  # type: ignore[arg-type]
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": level}
    assert "reasoning_effort" not in body


def test_the_thinking_display_goes_with_adaptive_thinking() -> None:
    """reasoning_display reaches the thinking config as asked."""
    options = RequestOptions(reasoning="high", reasoning_display="omitted")
    body = _messages("claude-opus-4-8", options)
    assert body["thinking"] == {"type": "adaptive", "display": "omitted"}


def test_a_model_taking_both_gets_a_budget_as_a_budget() -> None:
    """claude-sonnet-4-6 takes adaptive levels and manual budgets: a budget stays one."""
    body = _messages("claude-sonnet-4-6", RequestOptions(reasoning=4096))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "output_config" not in body


def test_a_budget_model_gets_a_level_as_its_budget() -> None:
    """claude-haiku-4-5 takes budgets only: a level becomes the level's budget."""
    body = _messages("claude-haiku-4-5", RequestOptions(reasoning="low"))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize(
    ("model", "options", "expected"),
    [
        ("gpt-5.5", RequestOptions(reasoning="off"), "none"),
        ("gpt-5.4-mini", RequestOptions(reasoning="xhigh"), "xhigh"),
        ("gpt-6-astra", RequestOptions(reasoning="max"), "max"),
    ],
)
def test_an_openai_model_gets_the_level_asked(
    model: str, options: RequestOptions, expected: str
) -> None:
    """A level reaches an OpenAI reasoning model as is; "off" is "none" where it exists."""
    assert _chat(model, options)["reasoning_effort"] == expected


@pytest.mark.parametrize(
    ("model", "options", "words"),
    [
        (
            "claude-opus-4-8",
            RequestOptions(reasoning=4096),
            "a thinking budget (4096 tokens) cannot be sent to claude-opus-4-8: it takes levels "
            "'low', 'medium', 'high', 'xhigh', 'max' or 'off'",
        ),
        (
            "claude-opus-5-5",
            RequestOptions(reasoning="minimal"),
            "reasoning 'minimal' is not offered by claude-opus-5-5: it takes levels 'low', "
            "'medium', 'high', 'xhigh', 'max'",
        ),
        (
            "claude-sonnet-4-6",
            RequestOptions(reasoning="xhigh"),
            "reasoning 'xhigh' is not offered by claude-sonnet-4-6",
        ),
        ("claude-sonnet-5-5", RequestOptions(reasoning="off"), "cannot turn reasoning off"),
        (
            "claude-opus-5-5",
            RequestOptions(tool_choice="required"),
            "claude-opus-5-5 refuses a forced tool_choice ('required'), with or without thinking",
        ),
        (
            "claude-haiku-5-5",
            RequestOptions(reasoning="high", tool_choice="read_file"),
            "Anthropic models that think accept only tool_choice",
        ),
        ("gpt-6-astra", RequestOptions(reasoning="off"), "gpt-6-astra cannot turn reasoning off"),
        ("gpt-6-astra", RequestOptions(reasoning="minimal"), "'minimal' is not offered"),
        ("gpt-5.5", RequestOptions(reasoning=2048), "a thinking budget (2048 tokens)"),
        ("gpt-4.1-mini", RequestOptions(reasoning="low"), "it takes 'off'"),
        ("gpt-5.5", RequestOptions(temperature=0.2), "only the default sampling"),
        ("gpt-5.5", RequestOptions(reasoning_display="omitted"), "no thinking display"),
    ],
)
def test_a_setting_the_model_does_not_take_is_refused_per_call(
    model: str, options: RequestOptions, words: str
) -> None:
    """Rendering refuses, naming the model and what it takes, before anything is sent."""
    render = _messages if model.startswith("claude-") else _chat
    with pytest.raises(RenderError) as caught:
        render(model, options)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("profile", "words"),
    [
        (
            {"model": "claude-opus-4-8", "reasoning": 8000},
            "roles.planner.reasoning (env NISSE_ROLE_PLANNER_REASONING): a thinking budget "
            "(8000 tokens) cannot be sent to claude-opus-4-8: it takes levels 'low', 'medium', "
            "'high', 'xhigh', 'max' or 'off' (model 'claude-opus-4-8'); from file {path}",
        ),
        (
            {"model": "claude-sonnet-4-6", "reasoning": "xhigh"},
            "reasoning 'xhigh' is not offered by claude-sonnet-4-6: it takes levels 'low', "
            "'medium', 'high', 'max' or a thinking budget in tokens or 'off'",
        ),
        (
            {"model": "claude-haiku-5-5", "reasoning": "high", "tool_choice": "required"},
            "Anthropic models that think accept only tool_choice",
        ),
        (
            {"model": "team-planner", "like": "claude-opus-5-5", "reasoning": "off"},
            "team-planner cannot turn reasoning off",
        ),
    ],
)
def test_a_setting_the_model_does_not_take_is_refused_at_load_time(
    profile: dict[str, Any], words: str, tmp_path: Path
) -> None:
    """A role profile the model cannot take is a ConfigError naming the key and the file."""
    path = write_config(
        tmp_path / "nisse.toml",
        {"llm": COMPLETE["llm"], "roles": {**COMPLETE["roles"], "planner": profile}},
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert words.format(path=path) in str(caught.value)


def test_an_alias_follows_its_likes_rules_and_route(tmp_path: Path) -> None:
    """``like`` gives an alias its model's route and rules, and is pinned and fingerprinted."""
    alias = {"model": "team-planner", "like": "claude-opus-5-5", "reasoning": "xhigh"}
    path = write_config(
        tmp_path / "nisse.toml",
        {"llm": COMPLETE["llm"], "roles": {**COMPLETE["roles"], "planner": alias}},
    )
    pin = load_settings(path).pin()
    assert pin.route("planner") == "anthropic_messages"
    record = pin.record()
    assert record["roles"]["planner"] == {
        "model": "team-planner",
        "route": "anthropic_messages",
        "options": {"reasoning": "xhigh", "like": "claude-opus-5-5"},
    }
    plain = {**alias, "like": "claude-opus-4-8"}
    other = write_config(
        tmp_path / "other.toml",
        {"llm": COMPLETE["llm"], "roles": {**COMPLETE["roles"], "planner": plain}},
    )
    assert load_settings(other).pin().fingerprint != pin.fingerprint
    body = _messages("team-planner", pin.options_for("planner") or RequestOptions())
    assert body["model"] == "team-planner"
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "xhigh"}


@pytest.mark.parametrize(
    ("model", "route"),
    [
        ("gpt-6-astra", "openai_responses"),
        ("openai/gpt-6-astra", "openai_responses"),
        ("gpt-6.2-sol", "openai_responses"),
        ("gpt-5.6-sol", "openai_responses"),
        ("gpt-5.5", "openai_responses"),
        ("gpt-5.4-mini", "openai_responses"),
        ("gpt-5.3", "openai_chat"),
        ("gpt-5", "openai_chat"),
        ("o3", "openai_chat"),
        ("gpt-4.1-mini", "openai_chat"),
        ("openai/gpt-scripted", "openai_chat"),
        ("claude-opus-4-8", "anthropic_messages"),
    ],
)
def test_the_route_column_sends_current_openai_reasoning_models_to_responses(
    model: str, route: str
) -> None:
    """gpt-5.4 and later and the gpt-6 family take the Responses route by default (the real
    API refuses tools with reasoning on chat completions for them); others keep theirs."""
    from nisse_llm.config.routing import route_for

    assert route_for(model) == route


def test_a_passthrough_prefix_still_wins_over_the_route_column() -> None:
    """An operator's passthrough prefix sends even a current OpenAI name to the messages route."""
    from nisse_llm.config.routing import route_for

    assert route_for("gpt-6-astra", ("gpt-6",)) == "anthropic_messages"
