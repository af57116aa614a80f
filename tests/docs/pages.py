"""The documentation's pages and their fenced code blocks, read from the Markdown itself.

A page is README.md or any Markdown file under docs/. A ```python block is an example
that runs; blocks of one page run in order, in one namespace, so a page may build its
example up step by step. A block that is not meant to run says so by its fence language
(``sh``, ``text``, ``toml``, ``yaml``, ``console``). HTML comments just above a block
(with only blank lines between) are its markers:

- ``<!-- requires: proxy -->``: the page runs through the real LiteLLM proxy (every block
  of it: one namespace holds one environment);
- ``<!-- file: NAME -->``: the block is a file the page's examples read; it is written into
  the page's working folder, under NAME, before any python block runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DOCS", "REPO", "Block", "Page", "all_pages", "read_page"]

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<lang>[\w+-]*)[^\n]*$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<key>[\w-]+)\s*:\s*(?P<value>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text, the line its code starts on, its markers."""

    page: str
    lang: str
    code: str
    line: int
    markers: tuple[tuple[str, str], ...]

    def marker(self, key: str) -> str | None:
        return next((value for k, value in self.markers if k == key), None)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Page:
    """A Markdown page: its path relative to the repository, and its fenced blocks."""

    name: str
    blocks: tuple[Block, ...]

    @property
    def python(self) -> list[Block]:
        return [b for b in self.blocks if b.lang == "python"]

    @property
    def needs_proxy(self) -> bool:
        return any(b.marker("requires") == "proxy" for b in self.blocks)

    @property
    def files(self) -> list[Block]:
        return [b for b in self.blocks if b.marker("file")]


def read_page(path: Path) -> Page:
    """Every fenced block of a Markdown file, with the markers just above it."""
    name = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        markers: list[tuple[str, str]] = []
        above = index - 1
        while above >= 0 and (not lines[above].strip() or _MARKER.match(lines[above])):
            if found := _MARKER.match(lines[above]):
                markers.insert(0, (found["key"], found["value"]))
            above -= 1
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(
                lines[index][len(indent) :] if lines[index].startswith(indent) else lines[index]
            )
            index += 1
        start = index - len(body) + 1  # the 1-based line of the block's first code line
        blocks.append(Block(name, opening["lang"], "\n".join(body) + "\n", start, tuple(markers)))
        index += 1
    return Page(name, tuple(blocks))


def all_pages() -> list[Page]:
    """README.md and every page under docs/, in a stable order."""
    paths = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [read_page(path) for path in paths]
