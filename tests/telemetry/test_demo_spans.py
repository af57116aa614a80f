"""The demo prints its spans when asked (`--spans`), through the real proxy."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from nisse_llm import _telemetry
from nisse_llm.testing.demo import main
from tests.integration.conftest import litellm_bin  # noqa: F401 (the session fixture)

pytestmark = pytest.mark.proxy


def test_the_demo_prints_a_span_per_call_with_spans(
    litellm_bin: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--spans`` prints one line per call span (the refused one in error), all in the
    agent span's trace, and leaves telemetry off afterwards."""
    monkeypatch.setenv("NISSE_LITELLM_BIN", str(litellm_bin))
    out = io.StringIO()
    assert main(["--spans"], out=out) == 0
    lines = [line.strip() for line in out.getvalue().splitlines() if "span '" in line]
    assert lines[0].startswith("span 'chat claude-sonnet-5-5' CLIENT trace ")
    assert "provider=anthropic role=planner in=412 out=38 finish=stop usd=0.001204" in lines[0]
    assert any("'chat gpt-5.6-sol'" in line and "provider=openai" in line for line in lines)
    assert "error=BudgetExhausted" in lines[-2]
    assert lines[-1].startswith("span 'invoke_agent demo' INTERNAL")
    assert len({re.search(r"trace (\w+)", line).group(1) for line in lines}) == 1  # type: ignore[union-attr]
    assert _telemetry.tracer is None
