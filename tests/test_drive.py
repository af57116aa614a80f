"""The sans-I/O drivers: a generator's asks answered by a plain call or an awaited one,
and a failing step raised inside the generator where it asked."""

from __future__ import annotations

import asyncio
from collections.abc import Generator

import pytest

from nisse_llm._drive import adrive, drive


def _doubling(seen: list[str]) -> Generator[int, int, list[int]]:
    """Asks for 1, 2, 3 doubled; a failed ask is noted and ends the dialogue."""
    answers = []
    for ask in (1, 2, 3):
        try:
            answers.append((yield ask))
        except ValueError as exc:
            seen.append(f"caught {exc}")
            break
        finally:
            seen.append(f"left {ask}")
    return answers


def test_drive_and_adrive_answer_each_ask_in_order() -> None:
    """Both drivers send each answer back and return the generator's result."""

    async def double(ask: int) -> int:
        return ask * 2

    assert drive(_doubling([]), lambda ask: ask * 2) == [2, 4, 6]
    assert asyncio.run(adrive(_doubling([]), double)) == [2, 4, 6]


def test_a_failing_step_is_raised_at_the_yield_that_asked() -> None:
    """The generator's own handlers and cleanups see a step's failure; an unhandled one
    reaches the caller."""

    def failing(ask: int) -> int:
        if ask == 2:
            raise ValueError("two")
        return ask

    seen: list[str] = []
    assert drive(_doubling(seen), failing) == [1]
    assert seen == ["left 1", "caught two", "left 2"]

    async def broken(ask: int) -> int:
        raise KeyError(ask)

    seen.clear()
    with pytest.raises(KeyError):
        asyncio.run(adrive(_doubling(seen), broken))
    assert seen == ["left 1"]
