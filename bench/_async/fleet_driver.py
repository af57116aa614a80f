"""A fleet agent's calls through a role router, written once: ``_async/fleet_driver.py`` is
the source, ``_sync/fleet_driver.py`` is generated from it by ``scripts/gen_sync.py``
(unasync): the agent's mode picks the driver, and with it the router.
"""

from __future__ import annotations

import httpx

from bench.fleet_task import TOOLS, Agent, clock
from nisse_llm.events.canonical import CanonicalEvent
from nisse_llm.transport._async import io
from nisse_llm.transport.routers import AsyncRoleRouter

__all__ = ["run_async"]


class AsyncCounting(httpx.AsyncBaseTransport):
    """Counts HTTP attempts (the router's clients share it)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def run_async(agent: Agent) -> None:
    """Run the agent's tasks until it should stop, one call at a time."""
    spec = agent.spec
    counter = AsyncCounting()

    async def sleep(seconds: float) -> None:
        agent.sleeps.append(seconds)
        await io.sleep(seconds)

    async with AsyncRoleRouter.from_pin(spec.pin(), transport=counter, sleep=sleep) as router:
        task = 0
        while not agent.should_stop(task):
            steps = agent.task(task)
            step = next(steps)
            ok = False
            try:
                while True:
                    agent.sleeps.clear()
                    before = counter.count
                    started = clock()
                    error: BaseException | None = None
                    events: list[CanonicalEvent] | None = None
                    try:
                        if step.streamed:
                            async with router.stream(step.role, step.log, TOOLS) as reply:
                                async for _ in reply:
                                    pass
                                events = reply.events
                        else:
                            events = await router.complete(step.role, step.log, TOOLS)
                    except Exception as exc:
                        error = exc
                    agent.record_call(step, task, started, counter.count - before, error)
                    step = steps.send(events)
            except StopIteration as done:
                ok = bool(done.value)
            if not ok:
                await io.sleep(spec.pause_s)
            task += 1
