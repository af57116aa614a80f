"""Fixtures for the command's tests: the transport tests' loopback server, per test."""

from __future__ import annotations

from tests.transport.conftest import server

__all__ = ["server"]
