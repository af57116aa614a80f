"""A driver that takes a PostgreSQL task's lease and keeps it until it is killed.

Run as ``python -m tests.task._lease_holder KEY HOLDER`` with the database's URL in
``NISSE_TEST_PG_URL``. It begins the task, appends one event, prints ``held`` and waits.
"""

from __future__ import annotations

import os
import sys
import time

from nisse_llm.events.canonical import UserText
from nisse_llm.task.postgres import PostgresTaskStore
from tests.task.helpers import make_pin


def main(key: str, holder: str) -> None:
    store = PostgresTaskStore(os.environ["NISSE_TEST_PG_URL"], key, holder=holder)
    store.begin(make_pin()).append_event(UserText(text=f"written by {holder}"))
    print("held", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
