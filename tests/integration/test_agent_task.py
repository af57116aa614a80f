"""The durable loop through the real proxy: a task on the messages route and one on the
Responses route, SIGKILLed while a non-repeatable tool runs, reopened and finished."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm import Task, ToolCall
from nisse_llm.agent.plan import unknown_result
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.agent._proxy_agent import QUESTION, pin_of, tools

pytestmark = pytest.mark.proxy

ROOT = Path(__file__).resolve().parents[2]
#: Role -> the upstream route its model's requests reach through the proxy.
ROUTES = {"planner": "anthropic_messages", "executor": "openai_responses"}


def _kill_mid_tool(proxy: LiteLLMProxy, role: str, task: Path, effects: Path) -> None:
    agent = subprocess.Popen(
        [
            sys.executable, "-m", "tests.agent._proxy_agent",
            proxy.base_url, proxy.token, role, str(task), str(effects),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert agent.stdout is not None
    line = agent.stdout.readline()
    if line != b"ready\n":
        agent.kill()
        _, err = agent.communicate(timeout=30)
        pytest.fail(f"the agent did not reach write_file: {line!r} {err.decode()[-2000:]}")
    agent.send_signal(signal.SIGKILL)
    agent.communicate(timeout=30)
    assert agent.returncode == -signal.SIGKILL


@pytest.mark.parametrize("role", sorted(ROUTES))
def test_a_task_killed_mid_tool_resumes_through_the_proxy(
    proxy: LiteLLMProxy, script: Script, role: str, tmp_path: Path
) -> None:
    """Killed inside write_file, the reopened task does not run it again: the model gets
    the stated error result through the proxy, answers, and the task is done."""
    script.add(
        ROUTES[role],  # type: ignore[arg-type]
        reply("Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        reply(ToolUse("write_file", {"path": "calc.py", "text": "return a + b"})),
        reply("Fixed, but check calc.py: the write was interrupted."),
    )
    task_path, effects = tmp_path / "task.jsonl", tmp_path / "effects.txt"
    _kill_mid_tool(proxy, role, task_path, effects)

    pin = pin_of(proxy.base_url, proxy.token)
    with Task.open(task_path, pin, prompt=QUESTION) as task:
        (write,) = [e for e in task.events if isinstance(e, ToolCall) and e.tool == "write_file"]
        result = task.run(role, tools=tools(effects, hang=False))
        assert task.done
        assert task.unknown_tool_runs == [write]
        assert task.unknown_calls == []

    assert result.text == "Fixed, but check calc.py: the write was interrupted."
    assert result.steps == 3  # the run's, the two before the kill included
    assert effects.read_text() == "calc.py\n"
    assert len(script.requests) == 3
    assert unknown_result(write).output in script.requests[-1].body.decode()
    assert [r.route for r in script.requests] == [ROUTES[role]] * 3
