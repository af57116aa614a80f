"""A sub-task stopped by the real proxy's budget refusal is resumed, not begun again, once
the budget is raised: the child's deployment has a budget its first call crosses, so its
second call is refused (`BudgetExhausted` from `delegate`); the proxy started again on the
same port with a higher budget, the parent reopened from the top resumes the same child,
whose first call is not made again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nisse_llm import BudgetExhausted, Task, Toolbox, load_settings
from nisse_llm.config.settings import Pin
from nisse_llm.testing import ScriptedServer, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel, free_port
from tests.agent._proxy_agent import ROLES
from tests.integration.helpers import REQUEST_TIMEOUT_S, fresh_script

pytestmark = pytest.mark.proxy

MODEL = "claude-delegate-budget"
TOKEN = "sk-nisse-delegation-budget"


@contextmanager
def _proxy(upstream: ScriptedServer, litellm_bin: Path, port: int, budget: float) -> Iterator[str]:
    """A proxy whose one deployment costs 1e-3 USD a token and may spend ``budget``."""
    model = ProxyModel(
        MODEL,
        "anthropic",
        max_budget=budget,
        input_cost_per_token=1e-3,
        output_cost_per_token=1e-3,
    )
    with LiteLLMProxy(
        upstream.base_url,
        executable=litellm_bin,
        models=[model],
        token=TOKEN,
        port=port,
        request_timeout_s=REQUEST_TIMEOUT_S,
    ) as running:
        yield running.base_url


def _pin(base_url: str) -> Pin:
    roles = {**ROLES, "delegate": MODEL}
    return load_settings(llm={"base_url": base_url, "token": TOKEN}, roles=roles).pin()


def test_a_child_refused_on_budget_is_resumed_after_the_budget_is_raised(
    upstream: ScriptedServer, litellm_bin: Path, tmp_path: Path
) -> None:
    reads: list[str] = []

    def read_file(path: str) -> str:
        """Read a file."""
        reads.append(path)
        return "x = 1"

    box = Toolbox([read_file])
    port = free_port()
    with fresh_script(upstream) as script:
        script.add(
            "anthropic_messages",
            reply("Reading.", ToolUse("read_file", {"path": "s1.py"})),
            reply("s1 is tidy."),
        )
        with _proxy(upstream, litellm_bin, port, 1e-6) as base_url:
            pin = _pin(base_url)
            with Task.open(tmp_path / "plan.jsonl", pin, prompt="Tidy s1.") as task:
                with pytest.raises(BudgetExhausted):
                    task.delegate("delegate", "Tidy s1.", tools=box)
                assert task.children == ["plan.1-delegate"]
        assert len(script.requests) == 1  # the refused call never reached the upstream
        with (
            _proxy(upstream, litellm_bin, port, 100.0) as base_url,
            Task.open(tmp_path / "plan.jsonl", _pin(base_url)) as task,
        ):
            done = task.delegate("delegate", "Tidy s1.", tools=box)
            usage = task.total_usage
        assert len(script.requests) == 2  # the child's first call was not made again
    assert done.text == "s1 is tidy."
    assert reads == ["s1.py"]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "plan.1-delegate.jsonl",
        "plan.jsonl",
    ]
    assert usage.calls == 3  # two answered, one refused, all in the child's file
