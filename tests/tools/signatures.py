"""A corpus of tool functions: every shape of signature and docstring a spec is built from."""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class Color(enum.Enum):
    """A colour."""

    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point on the grid."""

    x: int
    y: int = 0


class Shape(BaseModel):
    """A closed shape."""

    name: str = Field(description="What to call it.")
    points: list[Point]
    color: Color = Color.RED


class Tree(BaseModel):
    """A recursive tree."""

    label: str
    children: list[Tree] = []


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file's path, relative to the workspace.
    """
    return path


def grep(pattern: str, paths: list[str], ignore_case: bool = False, max_hits: int = 50) -> str:
    """Search files for a regular expression (Google style, typed args, a Returns section).

    Args:
        pattern (str): The regular expression.
        paths (list[str]): Files or directories to search,
            recursively for directories.
        ignore_case (bool): Match without regard to case.
        max_hits: Stop after this many matches.

    Returns:
        The matching lines.
    """
    return pattern


def resize(width: int, height: int | None = None, *, keep_ratio: bool = True) -> str:
    """Resize the image.

    Parameters
    ----------
    width : int
        New width in pixels.
    height : int, optional
        New height; computed from the ratio when left out.
    keep_ratio : bool
        Keep the aspect ratio.

    Returns
    -------
    str
        A summary.
    """
    return str(width)


def move(x: float, y: float, speed: float = 1.0) -> str:
    """Move the cursor.

    :param x: Horizontal target.
    :param y: Vertical target.
    :param speed: How fast, in
        pixels per millisecond.
    :returns: Where it ended.
    """
    return str(x)


def paint(
    color: Color, priority: Priority = Priority.LOW, mode: Literal["fill", "stroke"] = "fill"
) -> str:
    """Paint with enums and literals."""
    return color.value


def draw(shape: Shape, at: Point | None = None) -> str:
    """Draw a shape made of nested models."""
    return shape.name


def walk(tree: Tree) -> str:
    """Walk a recursive tree."""
    return tree.label


def schedule(
    title: Annotated[str, Field(min_length=1, max_length=80, description="Short title.")],
    on: date,
    tags: set[str] = frozenset(),  # type: ignore[assignment]  # a set default, read-only
    attempts: Annotated[int, Field(ge=1, le=5)] = 3,
    meta: dict[str, int] | None = None,
) -> str:
    """Schedule a task: constraints, dates, sets and mappings."""
    return title


def anything(value: Any, note: object = None) -> str:
    """Take untyped values."""
    return repr(value)


def no_arguments() -> str:
    """List everything (no arguments)."""
    return "all"


def undocumented(count: int, label: str = "x") -> str:
    return label * count


async def fetch(url: str, timeout_s: float = 10.0) -> str:
    """Fetch a URL (an async tool).

    Args:
        url: Where to fetch from.
        timeout_s: Give up after this many seconds.
    """
    return url


def positional(path: str, /, mode: str = "r") -> str:
    """A positional-only parameter."""
    return f"{path}:{mode}"


def tricky_names(json: str, model_config: int = 0, schema: bool = False) -> str:
    """Parameter names that shadow pydantic's own attributes."""
    return json


def unions(value: int | str, choice: Literal[1, 2, 3] | None = None) -> str:
    """Unions of scalars and an optional literal."""
    return str(value)


CORPUS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (
        read_file,
        grep,
        resize,
        move,
        paint,
        draw,
        walk,
        schedule,
        anything,
        no_arguments,
        undocumented,
        fetch,
        positional,
        tricky_names,
        unions,
    )
}
