"""A driver that takes a PostgreSQL task's lease and keeps it until it is killed.

Run as ``python -m tests.task._lease_holder KEY HOLDER`` with the database's URL in
``NISSE_TEST_PG_URL`` (and the lease's length and heartbeat, in seconds, in
``NISSE_TEST_LEASE_S`` and ``NISSE_TEST_HEARTBEAT_S`` if not the defaults). It begins the
task, appends one event and prints ``held``; then each line ``append TEXT`` on its
standard input appends ``TEXT`` and prints ``appended``, or ``TaskBusy`` when refused.
"""

from __future__ import annotations

import os
import sys

from nisse_llm.errors import TaskBusy
from nisse_llm.events.canonical import UserText
from nisse_llm.task._pg import HEARTBEAT_S, LEASE_S
from nisse_llm.task.postgres import PostgresTaskStore
from tests.task.helpers import make_pin


def main(key: str, holder: str) -> None:
    store = PostgresTaskStore(
        os.environ["NISSE_TEST_PG_URL"],
        key,
        holder=holder,
        lease_s=float(os.environ.get("NISSE_TEST_LEASE_S", LEASE_S)),
        heartbeat_s=float(os.environ.get("NISSE_TEST_HEARTBEAT_S", HEARTBEAT_S)),
    )
    store.begin(make_pin()).append_event(UserText(text=f"written by {holder}"))
    print("held", flush=True)
    for line in sys.stdin:
        command, _, text = line.strip().partition(" ")
        if command == "append":
            try:
                store.append_event(UserText(text=text))
                print("appended", flush=True)
            except TaskBusy:
                print("TaskBusy", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
