"""The lease's heartbeat ends when told, even when a beat loses the cancellation."""

from __future__ import annotations

import asyncio

from nisse_llm.task._async.io import Heartbeat


async def test_a_heartbeat_stops_though_a_beat_swallows_its_cancellation() -> None:
    """A beat that returns instead of raising when cancelled (as Python 3.11's
    ``asyncio.wait_for`` can, which the connection pool waits with) does not keep the
    heartbeat beating, nor `stop` waiting, after `stop`."""
    beats = 0
    beating = asyncio.Event()

    async def beat() -> None:
        nonlocal beats
        beats += 1
        beating.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return  # the cancellation lost

    heartbeat = Heartbeat(beat, 0.01)
    heartbeat.start()
    await asyncio.wait_for(beating.wait(), 30)
    stopping = asyncio.ensure_future(heartbeat.stop())
    await asyncio.wait({stopping}, timeout=30)
    assert stopping.done(), "stop() still waits for a heartbeat that beats on"
    seen = beats
    await asyncio.sleep(0.2)
    assert beats == seen == 1


async def test_a_cancelled_heartbeat_beats_no_more() -> None:
    """`cancel` (which does not wait) ends the beating too, a lost cancellation or not."""
    beats = 0
    beating = asyncio.Event()

    async def beat() -> None:
        nonlocal beats
        beats += 1
        beating.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return

    heartbeat = Heartbeat(beat, 0.01)
    heartbeat.start()
    await asyncio.wait_for(beating.wait(), 30)
    heartbeat.cancel()
    await asyncio.sleep(0.2)
    assert beats == 1
