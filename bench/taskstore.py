"""``python -m bench.taskstore [--smoke] [--out PATH]``: the task stores' append rate and step cost.

For the file store and PostgreSQL (a local server this run starts, ``fsync=on``), with one
task and with sixteen tasks appended to at once (a thread and a store each), it measures:

- appends per second: one 200-byte event per append (one ``fsync``, or one commit);
- the store's cost of an agent step: what a router step writes (a call's start record, its
  end record, the reply's events in one append, the tool result), timed per step;
- for PostgreSQL, the round trips and transactions a step costs once the task is open,
  counted at psycopg's cursor (each statement one round trip; a ``transaction()`` block
  adds its BEGIN and COMMIT and is one transaction, a statement outside one is its own).

Each figure is the median of the rounds. Writes bench/TASKSTORE.md unless ``--smoke``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from nisse_llm.config.settings import load_settings
from nisse_llm.events.canonical import AssistantText, ToolCall, ToolResult, UserText
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.task.records import CallRecord
from nisse_llm.testing.postgres import LocalPostgres

OUT = Path(__file__).resolve().parent / "TASKSTORE.md"
TEXT = "x" * 200
PIN = load_settings(
    None,
    llm={"base_url": "http://127.0.0.1:4000", "token": "sk-bench"},
    roles={"executor": "gpt-4.1-mini", "planner": "m", "delegate": "m", "consultant": "m"},
).pin()


def _step(store: TaskStore, n: int) -> None:
    """What one agent step writes through a router with a store."""
    start = store.append_call(CallRecord(model="m", route="openai_chat", outcome="started"))
    store.append_call(CallRecord(model="m", route="openai_chat", start=start.seq))
    call = ToolCall(call_id=f"c{n}", tool="read", arguments={"path": "a.py"})
    store.append_events([AssistantText(text=TEXT, model="m"), call])
    store.append_event(ToolResult(call_id=f"c{n}", output=TEXT))


def _append(store: TaskStore, n: int) -> None:
    store.append_event(UserText(text=TEXT))


def _rate(
    opener: Callable[[str], TaskStore], tasks: int, ops: int, op: Callable[[TaskStore, int], None]
) -> tuple[float, float]:
    """(operations per second over all tasks, median seconds per operation)."""
    stores = [opener(f"bench-{time.monotonic_ns()}-{t}").begin(PIN) for t in range(tasks)]
    times: list[list[float]] = [[] for _ in stores]

    def work(index: int) -> None:
        store = stores[index]
        for n in range(ops):
            began = time.perf_counter()
            op(store, n)
            times[index].append(time.perf_counter() - began)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(tasks)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    for store in stores:
        store.close()
    return tasks * ops / wall, statistics.median(t for each in times for t in each)


class _Counted:
    """Round trips and transactions psycopg's sync cursors and connections were asked for."""

    def __init__(self) -> None:
        self.round_trips = 0
        self.transactions = 0


@contextmanager
def _counting() -> Iterator[_Counted]:
    """Count the statements (and transactions) run through psycopg meanwhile."""
    counted = _Counted()
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany
    transaction = psycopg.Connection.transaction

    def one(cursor: psycopg.Cursor[Any]) -> None:
        counted.round_trips += 1
        if cursor.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            counted.transactions += 1

    def counted_execute(self: psycopg.Cursor[Any], *args: Any, **kwargs: Any) -> Any:
        one(self)
        return execute(self, *args, **kwargs)

    def counted_executemany(self: psycopg.Cursor[Any], *args: Any, **kwargs: Any) -> Any:
        one(self)
        return executemany(self, *args, **kwargs)

    def counted_transaction(self: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
        counted.round_trips += 2  # BEGIN and COMMIT
        counted.transactions += 1
        return transaction(self, *args, **kwargs)

    psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]
    psycopg.Cursor.executemany = counted_executemany  # type: ignore[method-assign]
    psycopg.Connection.transaction = counted_transaction  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Cursor.executemany = executemany  # type: ignore[method-assign]
        psycopg.Connection.transaction = transaction  # type: ignore[method-assign]


def step_round_trips(url: str, steps: int = 10) -> tuple[float, float]:
    """(round trips, transactions) per step of an open PostgreSQL task, over ``steps``
    steps after a first one (which opens the task and reads it)."""
    store = PostgresTaskStore(url, f"bench-trips-{time.monotonic_ns()}").begin(PIN)
    _step(store, 0)
    with _counting() as counted:
        for n in range(1, steps + 1):
            _step(store, n)
    store.close()
    return counted.round_trips / steps, counted.transactions / steps


def run(*, smoke: bool) -> tuple[list[tuple[str, int, float, float, float]], tuple[float, float]]:
    """Rows: (store, tasks, appends/s, median append ms, median step ms); and PostgreSQL's
    (round trips, transactions) per step."""
    ops = 20 if smoke else 200
    steps = 5 if smoke else 50
    rows = []
    with tempfile.TemporaryDirectory() as folder, LocalPostgres(fsync=True) as server:
        openers: dict[str, Callable[[str], TaskStore]] = {
            "file": lambda key: FileTaskStore(Path(folder) / f"{key}.jsonl"),
            "postgres": lambda key: PostgresTaskStore(server.url, key),
        }
        for name, opener in openers.items():
            for tasks in (1, 16):
                rate, append_s = _rate(opener, tasks, ops, _append)
                _, step_s = _rate(opener, tasks, steps, _step)
                rows.append((name, tasks, rate, append_s * 1000, step_s * 1000))
        trips = step_round_trips(server.url)
    return rows, trips


def render(rows: list[tuple[str, int, float, float, float]], trips: tuple[float, float]) -> str:
    lines = [
        "# Task stores: appends and the store's share of a step",
        "",
        "Written by `python -m bench.taskstore` (2-core shared machine; PostgreSQL local, ",
        "fsync on; threads, one store and one task each). A step is what a router step",
        "writes: start and end records of its call, the reply's events, the tool result.",
        "",
        "| store | tasks | appends/s (all tasks) | append, median ms | step, median ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, tasks, rate, append_ms, step_ms in rows:
        lines.append(f"| {name} | {tasks} | {rate:,.0f} | {append_ms:.2f} | {step_ms:.2f} |")
    round_trips, transactions = trips
    lines += [
        "",
        "What a step of an open PostgreSQL task costs the database (counted at psycopg;",
        "before the tasks rows and the fenced lease it was 16 round trips in 4 transactions):",
        "",
        "| round trips per step | transactions per step |",
        "| ---: | ---: |",
        f"| {round_trips:g} | {transactions:g} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; print, write nothing")
    parser.add_argument("--out", type=Path, default=None, help=f"report path (default {OUT})")
    args = parser.parse_args()
    text = render(*run(smoke=args.smoke))
    if args.smoke and args.out is None:
        print(text)
    else:
        (args.out or OUT).write_text(text)
        print(text)


if __name__ == "__main__":
    main()
