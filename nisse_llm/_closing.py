"""``with`` and ``async with`` for what closes: the block gets the object itself, and
leaving it calls ``close`` (``aclose``). The clients, streams, routers, scripted clients
and the task file's store share these instead of each spelling the pair out."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncClosing", "Closing"]


class Closing:
    """``with obj as obj:`` ... ``obj.close()`` on leaving."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds (each subclass says what)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing:
    """``async with obj as obj:`` ... ``await obj.aclose()`` on leaving."""

    __slots__ = ()

    async def aclose(self) -> None:
        """Release what the object holds (each subclass says what)."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
