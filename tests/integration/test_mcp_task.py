"""A durable task with tools from a real MCP server, through the real proxy, in both stores:
the server pinned with the task, its tools recorded, and a resumed task offered the same
tools (nothing said) or fewer (said, by `tool_changes` and a WARNING)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from nisse_llm import McpServer, Task, Toolbox, ToolChanges, load_settings
from nisse_llm.config.settings import Settings
from nisse_llm.task.records import StoredTools
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.agent._proxy_agent import ROLES
from tests.config.helpers import toml_dumps
from tests.mcp.helpers import REPO
from tests.task.stores import Place

pytestmark = pytest.mark.proxy

SECRET = "s3cret-mcp-value"


def _settings(proxy: LiteLLMProxy, folder: Path, **server: object) -> Settings:
    """Settings whose file declares the test MCP server over stdio with ``server``'s keys."""
    table = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.server", "stdio"],
        "cwd": str(REPO),
        **server,
    }
    path = folder / "nisse.toml"
    path.write_text(toml_dumps({"roles": ROLES, "mcp": {"servers": {"test": table}}}))
    return load_settings(path, llm={"base_url": proxy.base_url, "token": proxy.token})


def _offered(place: Place) -> list[list[str]]:
    found = place.open().read().records
    return [[s.name for s in r.tools.specs] for r in found if isinstance(r, StoredTools)]


def _tool_names(body: bytes) -> list[str]:
    """The names of the tools a request offered (its ``tools``, whatever the route's shape)."""
    tools = json.loads(body).get("tools", [])
    return [tool.get("name") or tool["function"]["name"] for tool in tools]


def test_a_resumed_mcp_task_offers_its_pinned_tools_or_says_what_changed(
    proxy: LiteLLMProxy,
    script: Script,
    place: Place,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Begun with the file's server (two tools, a secret in its env) and cut after a step;
    resumed from its pin after the file dropped a tool and the secret: the pinned server,
    the same tools, nothing said; then given the file's server of now: `add` removed,
    named before the step and by a WARNING, recorded, and not offered to the model."""
    script.add(
        "openai_responses",
        reply(ToolUse("add", {"a": 20, "b": 22})),
        reply("It is 42."),
        reply(ToolUse("echo", {"text": "hi"})),
        reply("Said hi."),
    )
    begun = _settings(proxy, tmp_path, tools=["echo", "add"], env={"TEST_SECRET": SECRET})
    pin = begun.pin()
    with (
        Toolbox.from_mcp(*McpServer.from_pin(pin)) as box,
        Task.open(place.open(), pin, prompt="What is 20 + 22?") as task,
    ):
        step = task.step("executor", tools=box)
    assert [r.output for r in step.results] == ["20 + 22 = 42"]
    assert _offered(place) == [["echo", "add"]]

    monkeypatch.setenv("NISSE_MCP_TEST_ENV_TEST_SECRET", SECRET)  # the file's is gone
    now = _settings(proxy, tmp_path, tools=["echo"])
    resumed = place.open().resume(proxy.token, base_url=proxy.base_url).pin
    (server,) = McpServer.from_pin(resumed, now)
    assert (server.tools, server.env) == (("echo", "add"), {"TEST_SECRET": SECRET})
    with (
        caplog.at_level(logging.WARNING),
        Toolbox.from_mcp(server) as box,
        Task.open(place.open(), resumed) as task,
    ):
        assert task.tool_changes(box) == ToolChanges()
        task.step("executor", tools=box)  # the program's first call, replayed from the file
        assert task.run("executor", tools=box).text == "It is 42."
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert _offered(place) == [["echo", "add"]]

    with (
        caplog.at_level(logging.WARNING),
        Toolbox.from_mcp(*McpServer.from_settings(now)) as box,
        Task.open(place.open(), resumed) as task,
    ):
        assert task.tool_changes(box) == ToolChanges(removed=("add",))
        task.step("executor", tools=box)  # replayed, as the run after it
        task.run("executor", tools=box)
        task.say("Now say hi.")
        assert task.run("executor", tools=box).text == "Said hi."
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "removed add" in warning
    assert _offered(place) == [["echo", "add"], ["echo"]]
    assert _tool_names(script.requests[-1].body) == ["echo"]
    assert [_tool_names(r.body) for r in script.requests[:2]] == [["echo", "add"]] * 2
    assert SECRET.encode() not in b"".join(place.lines())
