"""Shared test configuration: the project's tests never read the machine's NISSE_* settings."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_nisse_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no NISSE_* variables, so a developer's shell cannot leak in."""
    for name in list(os.environ):
        if name.startswith("NISSE_") and name not in (
            "NISSE_LITELLM_BIN",
            "NISSE_REDIS_BIN",
            "NISSE_PROXY_OTEL_PATH",
        ):
            monkeypatch.delenv(name)
