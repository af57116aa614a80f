# Generated from bench/_async/fleet_driver.py by scripts/gen_sync.py (unasync); do not edit.
"""A fleet agent's calls through a role router, written once: ``_async/fleet_driver.py`` is
the source, ``_sync/fleet_driver.py`` is generated from it by ``scripts/gen_sync.py``
(unasync): the agent's mode picks the driver, and with it the router.
"""

from __future__ import annotations

import httpx

from bench.fleet_task import TOOLS, Agent, clock
from nisse_llm.events.canonical import CanonicalEvent
from nisse_llm.transport._sync import io
from nisse_llm.transport.routers import RoleRouter

__all__ = ["run_sync"]


class Counting(httpx.BaseTransport):
    """Counts HTTP attempts (the router's clients share it)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def run_sync(agent: Agent) -> None:
    """Run the agent's tasks until it should stop, one call at a time."""
    spec = agent.spec
    counter = Counting()

    def sleep(seconds: float) -> None:
        agent.sleeps.append(seconds)
        io.sleep(seconds)

    with RoleRouter.from_pin(spec.pin(), transport=counter, sleep=sleep) as router:
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
                            with router.stream(step.role, step.log, TOOLS) as reply:
                                for _ in reply:
                                    pass
                                events = reply.events
                        else:
                            events = router.complete(step.role, step.log, TOOLS)
                    except Exception as exc:
                        error = exc
                    agent.record_call(step, task, started, counter.count - before, error)
                    step = steps.send(events)
            except StopIteration as done:
                ok = bool(done.value)
            if not ok:
                io.sleep(spec.pause_s)
            task += 1
