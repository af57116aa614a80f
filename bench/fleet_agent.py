"""One agent process of the fleet load run: short tool loops through a role router.

``python -m bench.fleet_agent SPEC_JSON`` runs tasks until the stop file appears (or
``max_tasks``): each task is a tool loop of one role, its events appended to the task's
own `TaskStore` as they happen. Every call becomes one JSON line in the records file
(outcome class, status, waits taken, HTTP attempts, client CPU and wall); every task a
line with its store's record count and digest; the process a last line with its CPU.
A sync agent uses `RoleRouter`, an async one `AsyncRoleRouter`; nothing else differs.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

from bench._async.fleet_driver import run_async
from bench._sync.fleet_driver import run_sync
from bench.fleet_task import MAX_TURNS, ROLES, Agent, AgentSpec

__all__ = ["MAX_TURNS", "ROLES", "AgentSpec", "main"]


def main(argv: Sequence[str]) -> int:
    spec = AgentSpec(**json.loads(argv[0]))
    started = time.perf_counter()
    with open(spec.records_path, "a", encoding="utf-8") as out:
        agent = Agent(spec, out)
        out.write(json.dumps({"kind": "spec", **asdict(spec), "token": "<redacted>"}) + "\n")
        if spec.mode == "async":
            asyncio.run(run_async(agent))
        else:
            run_sync(agent)
        agent.finish(started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
