"""A sub-task's ``invoke_agent`` span lies under its parent's: the model's delegation tool
runs inside the parent's run, and the child's run inside that tool's span."""

from __future__ import annotations

from pathlib import Path

from nisse_llm import Task, Toolbox
from tests.agent.test_delegation import PIN, Upstream, _router
from tests.telemetry.conftest import Telemetry


def test_the_childs_invoke_agent_span_is_under_the_parents(otel: Telemetry, tmp_path: Path) -> None:
    llm = _router(tmp_path / "plan.jsonl", Upstream())
    with llm, Task.open(llm.store, PIN, router=llm) as task:  # type: ignore[arg-type]
        task.say("Plan it.")
        task.run("planner", tools=Toolbox.delegation(task, "delegate", tools=None))
    spans = {s.context.span_id: s for s in otel.spans()}
    (parent,) = [s for s in spans.values() if s.name == "invoke_agent planner"]
    (child,) = [s for s in spans.values() if s.name == "invoke_agent delegate"]
    (tool,) = [s for s in spans.values() if s.name == "execute_tool delegate_to_delegate"]
    assert child.parent is not None
    assert child.parent.span_id == tool.context.span_id
    assert tool.parent is not None
    assert tool.parent.span_id == parent.context.span_id
    assert child.context.trace_id == parent.context.trace_id
