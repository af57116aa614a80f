# Generated from nisse_llm/agent/_async/delegation.py by tests/gen_sync.py (unasync); do not edit.
"""A task's sub-tasks, written once: ``_async/delegation.py`` is the source,
``_sync/delegation.py`` is generated from it by ``tests/gen_sync.py`` (unasync).

`delegate` runs a child task for a role in the parent's store, under a key derived from the
parent's (`nisse_llm.task.delegation`): the parent's program records the child's key as the
``delegate`` call starts, before the child's first record; the child records its parent,
then its own program (a ``say`` of the prompt, a ``run``). Reopened and run again from the
top, the parent's program meets its ``delegate`` record: done, it returns the child's
recorded result; not done, it opens the same child, whose program replays in turn, so no
child call is made twice and no child begun twice. A child stopped by an error (an
`UpstreamUnavailable`: a budget, the network) keeps its branch and the error reaches the
parent's caller; the parent reopened later resumes it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from nisse_llm.agent.plan import RunResult, run_result, run_result_record
from nisse_llm.task.delegation import ParentRecord, child_key, children_of, parent_of
from nisse_llm.task.records import ProgramRecord, UsageTotal

if TYPE_CHECKING:
    from nisse_llm.agent._sync.task import Task, Tools
    from nisse_llm.task.logstore import LogStore

__all__ = ["delegate", "total_usage"]


def delegate(
    task: Task,
    role: str,
    prompt: str,
    *,
    tools: Tools,
    system: str | None,
    max_steps: int,
    max_cost_usd: Decimal | float | None,
) -> RunResult[str]:
    """Run ``prompt`` as a child task of ``task`` for ``role`` (see the module docstring)."""
    from nisse_llm.agent._sync.task import Task

    asked = ProgramRecord(op="delegate", role=role, text=prompt)
    found = task._enter(asked)
    if found is not None and found.done is not None:
        assert found.done.result is not None
        return run_result(found.done.result, None)
    parent = task.store
    if found is None:
        # Numbered by the call's place in the program (1 first), known before any await:
        # two delegations started at once (a reply's concurrent tool calls) differ.
        key = child_key(parent.task_key, task._position, role)
        found = task._started(asked.model_copy(update={"child": key}), task._system)
    assert found.asked.child is not None
    with (
        parent.sibling(found.asked.child) as store,  # closed with the child: its lease too
        task.router.for_store(store) as router,
        Task.open(store, task.pin, router=router) as child,
    ):
        if parent_of((store.read()).records) is None:
            store.append_parent(ParentRecord(key=parent.task_key, role=role))
        child.say(prompt)
        result = child.run(
            role, tools=tools, system=system, max_steps=max_steps, max_cost_usd=max_cost_usd
        )
    if not result.pending_approvals:
        task._ended(found, run_result_record(result, None))
    return result


def total_usage(store: LogStore) -> UsageTotal:
    """The usage of the task in ``store`` and of all its descendants (read, no lease)."""
    found = store.read()
    total = found.usage.total
    for key in children_of(found.records):
        child = store.sibling(key)
        try:
            total = total + total_usage(child)
        finally:
            child.close()
    return total
