"""The demo's behaviour when no LiteLLM proxy is installed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nisse_llm.testing.demo import main


def test_demo_without_the_proxy_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no NISSE_LITELLM_BIN and no .venv-proxy here or above, the demo exits 2 and
    names `make proxy`."""
    monkeypatch.delenv("NISSE_LITELLM_BIN", raising=False)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(out=out) == 2
    assert "make proxy" in out.getvalue()
