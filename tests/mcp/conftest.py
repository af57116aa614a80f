"""The MCP tests' servers: the test tree's own over HTTP (one per module), and the git one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.helpers import HttpTestServer, mcp_git_bin


@pytest.fixture(scope="module")
def mcp_http_url() -> Iterator[str]:
    """The test MCP server over streamable HTTP, for the module's tests."""
    with HttpTestServer() as server:
        yield server.url


@pytest.fixture(scope="session")
def mcp_git() -> Path:
    """The published mcp-server-git executable (failing, never skipping, when absent)."""
    return mcp_git_bin()
