"""The real LiteLLM proxy in front of the scripted upstream, started once per session.

The proxy executable comes from NISSE_LITELLM_BIN (``make proxy`` sets it). Without it
these tests fail, never skip: CI must run them, and a developer must be told how.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm.testing import Script, ScriptedServer
from nisse_llm.testing.proxy import (
    LITELLM_BIN_ENV,
    LITELLM_PIN,
    LiteLLMProxy,
    ProxyNotInstalled,
    litellm_executable,
)
from tests.integration.helpers import REQUEST_TIMEOUT_S, fresh_script


@pytest.fixture(scope="session")
def litellm_bin() -> Path:
    """The LiteLLM executable, or a loud failure saying how to get one."""
    try:
        return litellm_executable()
    except ProxyNotInstalled as exc:
        problem = str(exc)
    if os.environ.get("CI"):
        pytest.fail(
            f"CI must run the proxy integration suite, but {problem}. The CI entry point "
            f"(make test) runs `make proxy` first; check that it exported {LITELLM_BIN_ENV}.",
            pytrace=False,
        )
    pytest.fail(
        f"\n{'!' * 72}\nThe proxy integration tests need a real LiteLLM proxy, and found none:\n"
        f"{problem}.\n"
        f"  make proxy    # installs {LITELLM_PIN} into .venv-proxy\n"
        f"  export {LITELLM_BIN_ENV}=$PWD/.venv-proxy/bin/litellm\n"
        f"(`make test` does both.)\n{'!' * 72}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def upstream() -> Iterator[ScriptedServer]:
    """The scripted upstream every proxy model entry points at."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="session")
def proxy(upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy process for the whole session, stopped by its PID at the end."""
    with LiteLLMProxy(
        upstream.base_url, executable=litellm_bin, request_timeout_s=REQUEST_TIMEOUT_S
    ) as running:
        yield running


@pytest.fixture
def script(upstream: ScriptedServer, proxy: LiteLLMProxy) -> Iterator[Script]:
    """The upstream's script, empty at each test's start; any unscripted request fails the test."""
    with fresh_script(upstream) as script:
        yield script
