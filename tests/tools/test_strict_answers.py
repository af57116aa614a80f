"""Strict answers: ``complete_as`` refuses fields the answer type does not declare, as
`Toolbox` refuses unknown arguments, and repairs them like any other invalid answer."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from nisse_llm import (
    FileTaskStore,
    LiteLLMClient,
    OutputValidationError,
    RoleRouter,
    ToolResult,
    UserText,
)
from nisse_llm.testing import Script, ScriptedClient, ScriptedTransport, Tokens, ToolUse, reply
from tests.task.helpers import make_pin

LOG = [UserText(text="Plan the fix.")]


class Step(BaseModel):
    """One step."""

    action: str


class Plan(BaseModel):
    """A plan of work."""

    steps: list[Step]
    risk: Literal["low", "high"]


class Loose(BaseModel):
    """An answer type that allows more fields itself."""

    model_config = ConfigDict(extra="allow")

    summary: str


def _answer(arguments: dict[str, Any], cost: str | None = None) -> Any:
    turn = reply(ToolUse("Plan", arguments), usage=Tokens(input=10, output=3))
    if cost is None:
        return turn
    return dataclasses.replace(turn, headers=(("x-litellm-response-cost", cost),))


MISSPELLED = {"steps": [{"action": "read"}], "risk": "low", "rsik": "high"}
NESTED = {"steps": [{"action": "read", "actoin": "fix"}], "risk": "low"}
GOOD = {"steps": [{"action": "read"}], "risk": "low"}


@pytest.mark.parametrize(("answer", "where"), [(MISSPELLED, "rsik"), (NESTED, "steps.0.actoin")])
def test_an_unknown_field_is_refused(answer: dict[str, Any], where: str) -> None:
    """A misspelled field, at the top or inside a nested model, is an OutputValidationError
    naming it, never dropped silently."""
    script = Script().chat(_answer(answer))
    with (
        LiteLLMClient(
            "http://proxy.test", "sk-test", transport=ScriptedTransport(script)
        ) as client,
        pytest.raises(OutputValidationError) as caught,
    ):
        client.complete_as(Plan, LOG, None, "gpt-5.4-mini")
    error = caught.value
    assert [(".".join(map(str, e["loc"])), e["type"]) for e in error.errors] == [
        (where, "extra_forbidden")
    ]
    assert json.loads(error.raw) == answer
    assert str(error) == (
        f"the answer does not validate as Plan after 1 attempt(s): {where}: Extra inputs "
        "are not permitted"
    )


def test_an_unknown_field_is_repaired_and_costs_stay_exact(tmp_path: Path) -> None:
    """Through a router with a task file, the misspelled answer goes back as the call's error
    result, the second answer is taken, and the two calls' costs sum exactly."""
    script = Script().chat(_answer(MISSPELLED, cost="0.1"), _answer(GOOD, cost="0.2"))
    path = tmp_path / "task.jsonl"
    with RoleRouter.from_pin(
        # Pinned to the chat route (the model's default is the Responses route).
        make_pin(executor={"model": "gpt-5.4-mini", "route": "openai_chat"}),
        store=FileTaskStore(path),
        transport=ScriptedTransport(script),
    ) as llm:
        result = llm.complete_as(Plan, "executor", LOG, None, repair_attempts=1)
    assert result.value == Plan(steps=[Step(action="read")], risk="low")
    feedback = result.events[1]
    assert isinstance(feedback, ToolResult)
    assert feedback.output == (
        "Invalid arguments for tool 'Plan':\n"
        "- rsik: Extra inputs are not permitted\n"
        "Call 'Plan' again with arguments that match its schema."
    )
    assert feedback.is_error
    total = FileTaskStore(path).read().usage.total
    assert total.calls == 2
    assert total.cost_usd == Decimal("0.3")
    assert isinstance(total.cost_usd, Decimal)


def test_a_type_that_allows_extra_fields_keeps_them() -> None:
    """An answer type declaring ``extra="allow"`` gets what it asked for."""
    client = ScriptedClient([reply(ToolUse("Loose", {"summary": "ok", "note": "more"}))])
    result = client.complete_as(Loose, LOG, None, "gpt-5.4-mini")
    assert result.value.summary == "ok"
    assert result.value.model_extra == {"note": "more"}


def test_a_text_answer_with_an_unknown_field_is_not_accepted() -> None:
    """An unforced text answer (JSON in text) with a stray field is a missing answer, not
    a silently trimmed one."""
    from nisse_llm.config.options import RequestOptions

    client = ScriptedClient([reply('{"steps": [{"action": "a"}], "risk": "low", "x": 1}')])
    with pytest.raises(OutputValidationError):
        client.complete_as(
            Plan, LOG, None, "claude-sonnet-4-6", options=RequestOptions(reasoning="high")
        )
