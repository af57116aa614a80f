"""Fixtures for the command's tests: the transport tests' loopback server, per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.transport.loopback import LoopbackServer, serve


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A misbehaving-on-command proxy stand-in on 127.0.0.1 and a free port."""
    yield from serve()
