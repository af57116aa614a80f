"""One client shared by threads or tasks: every reply matches its request, usage reported once each."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import AssistantText, Usage, UserText
from tests.transport.harness import MODEL, ROUTES, close, complete, make_client
from tests.transport.loopback import LoopbackServer, SleepLog

THREADS = 8
CALLS_PER_THREAD = 12
TASKS = 100


class UsageLog:
    """A usage callback that records every call it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple[Usage, str]] = []
        self._lock = threading.Lock()

    def __call__(self, usage: Usage, model: str) -> None:
        with self._lock:
            self.calls.append((usage, model))


def _request(route: Route, k: int) -> tuple[str, str]:
    # Distinct models and distinct text lengths, so both reply and usage identify the call.
    return f"{MODEL[route]}-{k}", f"request {k} " + "x" * k


@pytest.mark.parametrize("route", ROUTES)
def test_threads_share_one_sync_client(route: Route, server: LoopbackServer) -> None:
    """Eight threads on one sync client each get their own reply; usage is reported once per call."""
    usage = UsageLog()
    client = make_client(route, "sync", server.base_url, sleep=SleepLog(), on_usage=usage)

    def worker(thread: int) -> list[tuple[int, list[object]]]:
        results = []
        for i in range(CALLS_PER_THREAD):
            k = thread * CALLS_PER_THREAD + i
            model, text = _request(route, k)
            results.append((k, client.complete([UserText(text=text)], None, model)))
        return results

    with client, ThreadPoolExecutor(THREADS) as pool:
        outcomes = [item for chunk in pool.map(worker, range(THREADS)) for item in chunk]
    total = THREADS * CALLS_PER_THREAD
    assert len(outcomes) == total
    for k, events in outcomes:
        model, text = _request(route, k)
        assert events == [AssistantText(text=f"echo: {text}", model=model)]
    assert sorted((m, u.output) for u, m in usage.calls) == sorted(
        (_request(route, k)[0], len(_request(route, k)[1])) for k in range(total)
    )
    assert len(server.requests) == total


@pytest.mark.parametrize("route", ROUTES)
async def test_tasks_share_one_async_client(route: Route, server: LoopbackServer) -> None:
    """A hundred concurrent tasks on one async client each get their own reply and one usage report."""
    usage = UsageLog()
    client = make_client(route, "async", server.base_url, sleep=SleepLog(), on_usage=usage)

    async def one(k: int) -> tuple[int, list[object]]:
        model, text = _request(route, k)
        return k, list(await complete(client, [UserText(text=text)], None, model))

    try:
        outcomes = await asyncio.gather(*(one(k) for k in range(TASKS)))
    finally:
        await close(client)
    for k, events in outcomes:
        model, text = _request(route, k)
        assert events == [AssistantText(text=f"echo: {text}", model=model)]
    assert sorted((m, u.output) for u, m in usage.calls) == sorted(
        (_request(route, k)[0], len(_request(route, k)[1])) for k in range(TASKS)
    )
    assert len(server.requests) == TASKS
