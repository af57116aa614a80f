"""The context-window refusals of tests/fixtures/overflow/bodies.json, loaded once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "overflow" / "bodies.json"


@dataclass(frozen=True)
class OverflowBody:
    """One provider's refusal: its status, raw body, and the counts its text states."""

    name: str
    status: int
    body: bytes
    limit: int | None
    requested: int | None


def _load() -> tuple[dict[str, OverflowBody], dict[str, OverflowBody]]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())

    def rows(key: str) -> dict[str, OverflowBody]:
        return {
            row["name"]: OverflowBody(
                row["name"],
                row["status"],
                json.dumps(row["body"]).encode(),
                row.get("limit"),
                row.get("requested"),
            )
            for row in data[key]
        }

    return rows("overflows"), rows("near_misses")


OVERFLOWS, NEAR_MISSES = _load()
