"""An agent whose roles name current models, through the real proxy's default entries (the
testing kit's `scripted_models`): a thinking Claude planner's tool loop keeps its level and
its thinking from turn to turn, and an alias follows the model its ``like`` names."""

from __future__ import annotations

from typing import Any

import pytest

from nisse_llm.config.settings import load_settings
from nisse_llm.events.canonical import CanonicalEvent, Reasoning, ToolCall, ToolResult, UserText
from nisse_llm.testing import Script, Thinking, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import READ_FILE

pytestmark = pytest.mark.proxy

THINKING = Thinking("Read calc.py first.", "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ==")


def _pin(proxy: LiteLLMProxy, planner: Any) -> Any:
    roles = {
        "planner": planner,
        "executor": "gpt-5.4-mini",
        "delegate": "claude-haiku-5-5",
        "consultant": "gpt-6-astra",
    }
    return load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()


@pytest.mark.parametrize(
    "planner",
    [
        {"model": "claude-opus-5-5", "reasoning": "xhigh"},
        # An alias of the kit's entry, following claude-opus-5-5's rules by its like.
        {"model": "claude-sonnet-5-5", "like": "claude-opus-5-5", "reasoning": "xhigh"},
    ],
)
def test_a_thinking_planner_loops_at_its_level_with_its_thinking_replayed(
    proxy: LiteLLMProxy, script: Script, planner: dict[str, Any]
) -> None:
    """Each turn reaches the upstream with adaptive thinking at ``xhigh``; the thinking block
    goes back before the call it led to."""
    script.messages(
        reply(THINKING, ToolUse("read_file", {"path": "calc.py"})),
        reply("add() subtracts; fix it to add."),
    )
    log: list[CanonicalEvent] = [UserText(text="Why does test_add fail?")]
    with RoleRouter.from_pin(_pin(proxy, planner)) as router:
        first = router.complete("planner", log, [READ_FILE])
        call = next(event for event in first if isinstance(event, ToolCall))
        assert isinstance(first[0], Reasoning)
        log += [*first, ToolResult(call_id=call.call_id, output="def add(a, b): return a - b")]
        router.complete("planner", log, [READ_FILE])
    for request in script.requests:
        assert request.path.endswith("/v1/messages")
        assert request.json["thinking"] == {"type": "adaptive"}
        assert request.json["output_config"] == {"effort": "xhigh"}
    replayed = script.requests[1].json["messages"][1]["content"]
    assert [block["type"] for block in replayed] == ["thinking", "tool_use"]
