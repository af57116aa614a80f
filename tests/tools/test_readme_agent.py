"""The docs' three-tool agent (docs/guides/tools.md) runs as written against the scripted upstream, on both routes."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm import RoleRouter, ToolSpec, load_settings
from nisse_llm.testing import ScriptedServer
from tests.tools.readme_agent import FIXED, agent_turns, readme_agent, results_sent, script_for

ROLES = {"planner": "claude-sonnet-4-6", "delegate": "claude-sonnet-4-6", "consultant": "gpt-5.4"}


@pytest.mark.parametrize(
    ("route", "model"), [("chat", "gpt-5.4-mini"), ("messages", "claude-sonnet-4-6")]
)
def test_readme_agent_fixes_the_file_and_answers_typed(
    tmp_path: Path, route: str, model: str
) -> None:
    """The agent reads, writes and runs through its Toolbox, then returns a typed Outcome;
    its tools reach the wire from the functions alone."""
    agent = readme_agent()
    turns = agent_turns(tmp_path)
    with ScriptedServer(script_for(route, turns)) as server:
        pin = load_settings(
            llm={"base_url": server.base_url, "token": "sk-test"},
            # The chat case pins the route: the model's default is the Responses route.
            roles={**ROLES, "executor": {"model": model, "route": "openai_chat"}}
            if route == "chat"
            else {**ROLES, "executor": model},
        ).pin()
        with RoleRouter.from_pin(pin) as llm:
            outcome = agent.run_agent(llm, "Make check.py pass.")
        requests = server.script.requests
    assert outcome == agent.Outcome(done=True, summary="add() fixed")
    assert (tmp_path / "calc.py").read_text() == FIXED
    assert len(requests) == 5
    results = results_sent(requests[3].json)
    assert results[0] == "def add(a, b):\n    return a - b\n"
    assert results[1] == f"wrote {len(FIXED)} characters to {tmp_path / 'calc.py'}"
    assert results[2] == "exit 0\nok\n"
    sent = requests[0].json["tools"]
    names = [t["function"]["name"] if route == "chat" else t["name"] for t in sent]
    assert names == ["read_file", "write_file", "run_command"]
    run_command = ToolSpec.from_function(agent.run_command)
    assert run_command.parameters["properties"]["argv"] == {
        "description": "The program and its arguments.",
        "items": {"type": "string"},
        "type": "array",
    }
    last = requests[4].json
    last_names = [t["function"]["name"] if route == "chat" else t["name"] for t in last["tools"]]
    assert last_names == ["read_file", "write_file", "run_command"]
    schema = (
        last["response_format"]["json_schema"]["schema"]
        if route == "chat"
        else last["output_config"]["format"]["schema"]
    )
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"done", "summary"}
