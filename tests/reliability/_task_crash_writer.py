"""A task writer the crash test kills: begins (or re-opens) a task, then appends events and
call records forever, printing each record's seq once `append_*` has returned.

Run as ``python -m tests.reliability._task_crash_writer PATH`` (a task file), or with a task
key and the database's URL in ``NISSE_TEST_PG_URL`` (a PostgreSQL task); with
``NISSE_TEST_ASYNC=1`` it writes through the async store, awaited on an event loop. It prints ``ready`` once
`TaskStore.begin` has returned (the header is durable), then the seq of every record after
its append returned. Event sizes vary up to 1 MiB so kills land inside writes; a call
record follows every batch of one to three events.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from nisse_llm.errors import TaskBusy
from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore, PostgresTaskStore
from tests.reliability._crash_writer import payload
from tests.task.helpers import call_record, make_pin

#: Most records per append: an event batch carries up to three.
MAX_BATCH = 3


def _lease() -> dict[str, float]:
    """The PostgreSQL lease the test asks for (a killed writer's runs out sooner)."""
    lease_s = float(os.environ.get("NISSE_TEST_LEASE_S", "15"))
    return {"lease_s": lease_s, "heartbeat_s": lease_s / 4}


def main(where: str) -> None:
    url = os.environ.get("NISSE_TEST_PG_URL")
    opened = FileTaskStore(where) if url is None else PostgresTaskStore(url, where, **_lease())
    while True:  # the writer killed before this one may hold the lease until it runs out
        try:
            store = opened.begin(make_pin())
            break
        except TaskBusy:
            time.sleep(0.05)
    print("ready", flush=True)
    while True:
        first = store.next_seq
        count = 1 + (first * 40503) % MAX_BATCH
        stored = store.append_events(
            UserText(text=payload(seq)) for seq in range(first, first + count)
        )
        print("\n".join(str(record.seq) for record in stored), flush=True)
        call = store.append_call(call_record(store.next_seq))
        print(call.seq, flush=True)


async def amain(where: str) -> None:
    """`main` through the async stores."""
    url = os.environ.get("NISSE_TEST_PG_URL")
    if url is None:
        opened: AsyncFileTaskStore | AsyncPostgresTaskStore = AsyncFileTaskStore(where)
    else:
        opened = AsyncPostgresTaskStore(url, where, **_lease())
    while True:  # the writer killed before this one may hold the lease until it runs out
        try:
            store = await opened.begin(make_pin())
            break
        except TaskBusy:
            await asyncio.sleep(0.05)
    print("ready", flush=True)
    while True:
        first = await store.next_seq()
        count = 1 + (first * 40503) % MAX_BATCH
        stored = await store.append_events(
            UserText(text=payload(seq)) for seq in range(first, first + count)
        )
        print("\n".join(str(record.seq) for record in stored), flush=True)
        call = await store.append_call(call_record(await store.next_seq()))
        print(call.seq, flush=True)


if __name__ == "__main__":
    if os.environ.get("NISSE_TEST_ASYNC") == "1":
        asyncio.run(amain(sys.argv[1]))
    else:
        main(sys.argv[1])
