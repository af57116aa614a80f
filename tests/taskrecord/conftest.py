"""The `place` fixture: each store test runs once on a task file and once in PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.taskrecord.stores import KINDS, Place


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """One task's place in the store under test (the session's server for Postgres)."""
    server = request.getfixturevalue("postgres") if request.param == "postgres" else None
    found = Place(request.param, tmp_path, server)
    yield found
    found.close()
