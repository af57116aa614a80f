"""A finished run of encoded messages kept as a few large blocks, so a body is sent unbuilt.

Joining a megabyte body costs more than sending it (fresh pages for every call), so the
renderers hand the transport the body as parts: a small head, the blocks covering the
messages that can no longer change, and a fresh join of the rest with the tail. A block
is ``b",".join(run) + b","``; a new block is made once the uncovered run reaches
`BLOCK_MIN` bytes, and merged into the blocks before it while they are no larger, so a
log of ``n`` bytes is ``O(log n)`` blocks and each byte is copied ``O(log n)`` times over
the life of a log rather than once per call.
"""

from __future__ import annotations

__all__ = ["BLOCK_MIN", "EMPTY", "Rope"]

#: Below this a run is cheaper to join each call than to track (one send per block).
BLOCK_MIN = 64 * 1024


class Rope:
    """Blocks covering ``messages[:ends[-1]]``; ``ends[i]`` is the count after block ``i``.
    Never changed once made (`extended` makes a new one)."""

    __slots__ = ("blocks", "ends")

    def __init__(self, blocks: tuple[bytes, ...] = (), ends: tuple[int, ...] = ()) -> None:
        self.blocks = blocks
        self.ends = ends

    @property
    def covered(self) -> int:
        """How many messages the blocks cover."""
        return self.ends[-1] if self.ends else 0

    def extended(self, run: list[bytes], final: int) -> Rope:
        """This rope grown by ``run``, the messages from `covered` to ``final`` (which can
        no longer change), once that run is worth a block; ``self`` while it is not."""
        if not run or sum(map(len, run)) < BLOCK_MIN:
            return self
        blocks = list(self.blocks)
        ends = list(self.ends)
        parts = [b",".join([*run, b""])]
        size = len(parts[0])
        while blocks and len(blocks[-1]) <= size:
            parts.append(blocks.pop())
            size += len(parts[-1])
            ends.pop()
        parts.reverse()
        blocks.append(parts[0] if len(parts) == 1 else b"".join(parts))
        ends.append(final)
        return Rope(tuple(blocks), tuple(ends))

    def usable(self, limit: int) -> tuple[tuple[bytes, ...], int]:
        """The leading blocks that end at or before message ``limit``, and where they end."""
        ends = self.ends
        count = len(ends)
        while count and ends[count - 1] > limit:
            count -= 1
        return self.blocks[:count], ends[count - 1] if count else 0


EMPTY = Rope()
