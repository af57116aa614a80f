"""The two drivers of a sans-I/O dialogue: code that needs I/O is written once as a
generator that yields what it needs done and is sent the result; `drive` does each step
with a plain call, `adrive` awaits it. So a sync and an async API share one body::

    def steps() -> Generator[Ask, Answer, Result]: ...   # the rules, once
    def run() -> Result: return drive(steps(), do)        # do(ask) -> answer
    async def arun() -> Result: return await adrive(steps(), ado)

A step that raises has its exception thrown into the generator at the ``yield`` that
asked for it, so its ``try`` and ``with`` blocks see it as they would inline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["adrive", "drive"]

Ask = TypeVar("Ask")
Result = TypeVar("Result")


def drive(steps: Generator[Ask, Any, Result], do: Callable[[Ask], Any]) -> Result:
    """Run ``steps`` to its result, answering each ask with ``do(ask)``."""
    try:
        ask = next(steps)
        while True:
            try:
                answer = do(ask)
            except BaseException as exc:
                ask = steps.throw(exc)
            else:
                ask = steps.send(answer)
    except StopIteration as done:
        result: Result = done.value
        return result


async def adrive(steps: Generator[Ask, Any, Result], do: Callable[[Ask], Awaitable[Any]]) -> Result:
    """`drive` for asyncio: each ask is answered with ``await do(ask)``."""
    try:
        ask = next(steps)
        while True:
            try:
                answer = await do(ask)
            except BaseException as exc:
                ask = steps.throw(exc)
            else:
                ask = steps.send(answer)
    except StopIteration as done:
        result: Result = done.value
        return result
