"""Both waits on the PostgreSQL store: a call approved with ``nisse-llm task approve`` given
only the database's URL (its password in PGPASSWORD), and a sub-task in the same database
under its derived key, its usage summed with the parent's."""

from __future__ import annotations

from pathlib import Path

from nisse_llm import Task
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing import RecordedRequest, Script, ScriptedTransport, ToolUse, Turn, reply
from nisse_llm.testing.postgres import LocalPostgres
from nisse_llm.transport.routers import RoleRouter
from tests.agent.test_approvals import Repo
from tests.agent.test_delegation import PIN
from tests.task.helpers import task_cli


def _upstream(request: RecordedRequest) -> Turn:
    if request.user_texts[-1] == "Tidy s3.":
        return reply("s3 is tidy.")
    if request.tool_results:
        return reply("Pushed.")
    return reply(ToolUse("git_push", {"branch": "fix"}))


def test_approval_from_the_cli_and_a_sub_task_in_a_database(
    postgres: LocalPostgres, tmp_path: Path
) -> None:
    url = postgres.database(f"waits_{tmp_path.name}".lower())
    repo = Repo(tmp_path / "effects.log")
    transport = ScriptedTransport(Script(fallback=_upstream))

    def program() -> tuple[str, list[str], int]:
        with (
            PostgresTaskStore(url, "plan") as store,
            RoleRouter.from_pin(PIN, store=store, transport=transport) as llm,
            Task.open(store, PIN, router=llm) as task,
        ):
            task.say("Push the fix.")
            ran = task.run("planner", tools=repo.box())
            if ran.pending_approvals:
                return ran.pending_approvals[0].call_id, [], 0
            task.delegate("delegate", "Tidy s3.", tools=None)
            return ran.text, task.children, task.total_usage.calls

    call_id, _, _ = program()
    bare = url.replace(f":{postgres.password}@", "@", 1)
    env = {"PGPASSWORD": postgres.password}
    assert call_id in task_cli("pending", "plan", "--store", bare, env=env)
    task_cli("approve", "plan", call_id, "--by", "ana", "--store", bare, env=env)
    assert program() == ("Pushed.", ["plan.3-delegate"], 3)
    assert [r["tool"] for r in repo.runs()] == ["git_push"]
    with PostgresTaskStore(url, "plan.3-delegate") as child:
        child.lease()  # released as the sub-task closed: TaskBusy otherwise
        assert child.read().usage.total.calls == 1
