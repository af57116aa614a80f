"""An agent's program through the real proxy, as the upstream receives it: a typed answer in
one request with the route's native format, strict tools on the Responses route, and the
system prompt in each route's own place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nisse_llm import Task, Toolbox, load_settings
from nisse_llm.config.settings import Pin
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.agent._proxy_agent import QUESTION, ROLES

pytestmark = pytest.mark.proxy

SYSTEM = "You are the planner of a careful coding agent."
#: Role -> the route its model's requests take (the consultant is put on the chat route).
ROUTES = {
    "planner": "anthropic_messages",
    "executor": "openai_responses",
    "consultant": "openai_chat",
}


class Plan(BaseModel):
    """A plan."""

    steps: list[str]


def read_file(path: str) -> str:
    """Read a file."""
    return "def add(a, b):\n    return a - b"


def grep(pattern: str, limit: int = 10) -> str:
    """Search the files."""
    return "calc.py:2"


def _pin(proxy: LiteLLMProxy) -> Pin:
    roles: dict[str, Any] = {
        **ROLES,
        "consultant": {"model": "gpt-6-astra", "route": "openai_chat"},
    }
    return load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()


def _body(request: Any) -> dict[str, Any]:
    return json.loads(request.body)  # type: ignore[no-any-return]


def _system_sent(route: str, body: dict[str, Any]) -> str:
    """The system prompt where ``route``'s upstream body carries it."""
    if route == "anthropic_messages":
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    if route == "openai_responses":
        return str(body["instructions"])
    first = body["messages"][0]
    assert first["role"] in ("system", "developer")
    content = first["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


@pytest.mark.parametrize("role", ["planner", "executor"])
def test_run_as_is_one_upstream_request_in_the_native_format(
    proxy: LiteLLMProxy, script: Script, role: str, tmp_path: Path
) -> None:
    """claude-opus-5-5 (messages route) and gpt-6-astra (Responses route) answer a typed
    `run_as` with tools offered in one upstream request carrying the route's native format
    and the system prompt in its place; reopened, the answer comes from the file."""
    route = ROUTES[role]
    plan = {"steps": ["fix the sign in add"]}
    script.add(route, reply(json.dumps(plan)))  # type: ignore[arg-type]
    pin = _pin(proxy)
    with Task.open(tmp_path / "task.jsonl", pin, prompt=QUESTION) as task:
        result = task.run_as(role, Plan, tools=Toolbox([read_file]), system=SYSTEM)
    assert result.output == Plan(**plan)
    (request,) = script.requests
    body = _body(request)
    assert request.route == route
    if route == "anthropic_messages":
        assert body["output_config"]["format"]["type"] == "json_schema"
    else:
        assert body["text"]["format"]["type"] == "json_schema"
        assert body["text"]["format"]["strict"] is True
    assert [t.get("name") for t in body["tools"]] == ["read_file"]
    assert _system_sent(route, body) == SYSTEM

    with Task.open(tmp_path / "task.jsonl", pin) as again:
        assert again.run_as(role, Plan, tools=Toolbox([read_file]), system=SYSTEM) == result
    assert len(script.requests) == 1


def test_tools_reach_the_responses_route_strict_where_their_schema_allows(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path
) -> None:
    """Through the proxy, gpt-6-astra's upstream gets ``read_file`` (every parameter
    required) with ``strict: true`` and ``grep`` (an optional parameter) with ``false``."""
    script.responses(reply(ToolUse("read_file", {"path": "calc.py"})), reply("Read it."))
    with Task.open(tmp_path / "task.jsonl", _pin(proxy), prompt=QUESTION) as task:
        task.run("executor", tools=Toolbox([read_file, grep]))
    for request in script.requests:
        strict = {t["name"]: t["strict"] for t in _body(request)["tools"]}
        assert strict == {"read_file": True, "grep": False}


@pytest.mark.parametrize("role", sorted(ROUTES))
def test_the_system_prompt_reaches_each_route_in_its_place(
    proxy: LiteLLMProxy, script: Script, role: str, tmp_path: Path
) -> None:
    """``system=`` arrives upstream as the messages route's ``system``, the Responses
    route's ``instructions`` and the chat route's first message."""
    route = ROUTES[role]
    script.add(route, reply("Noted."))  # type: ignore[arg-type]
    with Task.open(tmp_path / "task.jsonl", _pin(proxy), prompt=QUESTION) as task:
        task.run(role, tools=None, system=SYSTEM)
    (request,) = script.requests
    assert request.route == route
    assert _system_sent(route, _body(request)) == SYSTEM


def test_tools_reach_the_messages_route_strict_where_their_schema_allows(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path
) -> None:
    """Through the proxy, claude-opus-5-5's upstream on ``/v1/messages`` gets ``read_file``
    (every parameter required) with ``strict: true``, unchanged, and ``grep`` (an optional
    parameter) without it."""
    script.add(
        "anthropic_messages", reply(ToolUse("read_file", {"path": "calc.py"})), reply("Read it.")
    )
    with Task.open(tmp_path / "task.jsonl", _pin(proxy), prompt=QUESTION) as task:
        task.run("planner", tools=Toolbox([read_file, grep]))
    assert len(script.requests) == 2
    for request in script.requests:
        assert request.route == "anthropic_messages"
        tools = {t["name"]: t for t in _body(request)["tools"]}
        assert tools["read_file"]["strict"] is True
        assert tools["read_file"]["input_schema"]["additionalProperties"] is False
        assert "strict" not in tools["grep"]
