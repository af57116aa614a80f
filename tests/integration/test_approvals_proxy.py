"""Approvals through the real proxy, on each route: the reply asking for ``git_push`` and
``read_file`` runs the read and stops with the push pending; ``nisse-llm task approve``
from another process; the task reopened runs the push once, and its result reaches the
upstream. A denial's reason reaches the upstream as an error result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nisse_llm import Task, Toolbox, load_settings
from nisse_llm.config.settings import Pin
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.agent._proxy_agent import QUESTION, ROLES
from tests.task.helpers import task_cli

pytestmark = pytest.mark.proxy

ROUTES = {
    "planner": "anthropic_messages",
    "executor": "openai_responses",
    "consultant": "openai_chat",
}


def _pin(proxy: LiteLLMProxy) -> Pin:
    roles: dict[str, Any] = {
        **ROLES,
        "consultant": {"model": "gpt-6-astra", "route": "openai_chat"},
    }
    return load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()


def _box(effects: Path) -> Toolbox:
    def note(text: str) -> None:
        with effects.open("a", encoding="utf-8") as out:
            out.write(text + "\n")

    def read_file(path: str) -> str:
        """Read a file."""
        note(f"read {path}")
        return "def add(a, b):\n    return a + b"

    def git_push(branch: str) -> str:
        """Push a branch."""
        note(f"push {branch}")
        return f"pushed {branch}"

    return Toolbox([read_file, git_push], needs_approval={"git_push"})


@pytest.mark.parametrize("role", sorted(ROUTES))
def test_an_approved_push_runs_once_and_a_denied_one_tells_the_model_why(
    proxy: LiteLLMProxy, script: Script, role: str, tmp_path: Path
) -> None:
    route = ROUTES[role]
    asks = reply(
        "Reading, then pushing.",
        ToolUse("git_push", {"branch": "fix"}),
        ToolUse("read_file", {"path": "calc.py"}),
    )
    script.add(route, asks, reply("Pushed."), asks, reply("Not pushed."))  # type: ignore[arg-type]
    effects = tmp_path / "effects.log"
    pin = _pin(proxy)
    for key, decision in (("pushed", "approve"), ("denied", "deny")):
        path = tmp_path / f"{key}.jsonl"
        with Task.open(path, pin, prompt=QUESTION) as task:
            (pending,) = task.run(role, tools=_box(effects)).pending_approvals
        assert pending.tool == "git_push"
        extra = ["--reason", "the release is frozen"] if decision == "deny" else []
        task_cli(decision, key, pending.call_id, "--by", "ana", "--store", str(tmp_path), *extra)
        with Task.open(path, pin, prompt=QUESTION) as task:
            done = task.run(role, tools=_box(effects))
            assert task.done
        sent = json.dumps(json.loads(script.requests[-1].body))
        if decision == "approve":
            assert done.text == "Pushed."
            assert "pushed fix" in sent
        else:
            assert done.text == "Not pushed."
            assert "the release is frozen" in sent
    assert effects.read_text().splitlines() == ["read calc.py", "push fix", "read calc.py"]
    assert [r.route for r in script.requests] == [route] * 4
