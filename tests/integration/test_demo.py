"""The main job (`python -m nisse_llm.testing.demo`) and the dev proxy config it names."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from nisse_llm.testing.demo import DEMO_MODELS, main
from tests.integration.helpers import dev_proxy_config

pytestmark = pytest.mark.proxy


def test_demo_runs_a_session_and_stops_its_proxy(
    litellm_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo pins its config, runs both routes with a tool call, classifies a budget refusal, exits 0 and leaves no proxy behind."""
    monkeypatch.setenv("NISSE_LITELLM_BIN", str(litellm_bin))
    out = io.StringIO()
    assert main(out=out) == 0
    text = out.getvalue()
    assert "SCRIPTED" in text
    assert "config/litellm.dev.yaml" in text
    record = json.loads(text[text.index("{", text.index("pin record")) : text.index("[4/5]")])
    assert record["roles"]["planner"] == {
        "model": "claude-sonnet-5-5",
        "route": "anthropic_messages",
    }
    assert record["roles"]["executor"] == {"model": "gpt-5.6-sol", "route": "openai_responses"}
    assert "planner (claude-sonnet-5-5 via /v1/messages; usage: in 412, out 38)" in text
    assert "executor (gpt-5.6-sol via /v1/responses; usage: in 530, out 17)" in text
    assert "calls run_tests(" in text
    assert "tool result (error): FAILED tests/test_calc.py::test_add" in text
    assert "says: Done: add() returned a - b" in text
    # Each call's cost and id as the proxy priced and named it (real price-map models).
    assert re.search(
        r"planner\s+claude-sonnet-5-5\s+/v1/messages\s+in\s+412\s+out\s+38\s+\$0\.001204\s+[0-9a-f-]{8}",
        text,
    )
    assert re.search(r"total\s+in\s+3592\s+out\s+148\s+\$0\.0\d+", text)
    assert "raised BudgetExhausted (an UpstreamUnavailable), HTTP 429" in text
    assert "not retried: 0 waits, 0 requests reached the upstream" in text
    # LiteLLM's "<spend> >= <period>" is printed once (the log line) and said plainly.
    assert text.count(" >= 1d") == 1
    assert "max_budget $0.000001 per budget_duration 1d" in text
    assert re.search(r'ends "<spend> >= <budget period>": \$0\.0\d+ spent in this 1d period', text)
    assert "sk-nisse-" not in text  # the proxy token is never printed
    assert "NISSE_LLM_TOKEN" not in os.environ
    pid = int(re.search(r"\(pid (\d+)\)", text).group(1))  # type: ignore[union-attr]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_dev_proxy_config_serves_the_demo_model_names(litellm_bin: Path) -> None:
    """config/litellm.dev.yaml defines the demo's models with the same providers and the suite's settings."""
    config = dev_proxy_config(litellm_bin)
    served = {e["model_name"]: e["litellm_params"]["model"] for e in config["model_list"]}
    demo = {m.name: f"{m.provider}/{m.name}" for m in DEMO_MODELS}
    assert {name: served.get(name) for name in demo} == demo
    assert config["litellm_settings"]["num_retries"] == 0
    assert config["litellm_settings"]["use_chat_completions_url_for_anthropic_messages"] is True
    assert config["router_settings"]["optional_pre_call_checks"] == ["enforce_model_rate_limits"]
