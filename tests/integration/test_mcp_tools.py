"""A full agent turn through the real proxy on every route, with tools from a real MCP
server: the model's tool call reaches the server, and its answer reaches the model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nisse_llm import (
    AnthropicPassthroughClient,
    AssistantText,
    CanonicalEvent,
    LiteLLMClient,
    OpenAIResponsesClient,
    Toolbox,
    ToolCall,
    ToolResult,
    UserText,
)
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.mcp.helpers import stdio_test_server

pytestmark = pytest.mark.proxy

#: Each route's client, and the proxy model it asks for.
ROUTES = {
    "chat": (LiteLLMClient, "gpt-scripted"),
    "messages": (AnthropicPassthroughClient, "claude-scripted"),
    "responses": (OpenAIResponsesClient, "gpt-scripted"),
}


@pytest.fixture(scope="module")
def toolbox() -> Iterator[Toolbox]:
    """The test MCP server's tools, started once for the module."""
    with Toolbox.from_mcp(stdio_test_server(tools=["echo", "add"])) as box:
        yield box


@pytest.mark.parametrize("route", ROUTES)
def test_an_mcp_tool_call_goes_round_the_loop(
    proxy: LiteLLMProxy, script: Script, toolbox: Toolbox, route: str
) -> None:
    """The model calls the MCP tool, the server answers, the answer reaches the model
    through the proxy, and the log holds call, result and final text."""
    script.when(
        reply("Checking.", ToolUse("add", {"a": 20, "b": 22})), user_text="What is 20 + 22?"
    )
    script.when(reply("It is 42."), tool_result="20 + 22 = 42")
    cls, model = ROUTES[route]
    log: list[CanonicalEvent] = [UserText(text="What is 20 + 22?")]
    with cls(proxy.base_url, proxy.token) as client:
        first = client.complete(log, toolbox, model)
        results = toolbox.run(first)
        log += [*first, *results]
        log += client.complete(log, toolbox, model)
    call = next(event for event in log if isinstance(event, ToolCall))
    assert (call.tool, call.arguments) == ("add", {"a": 20, "b": 22})
    assert log[-2:] == [
        ToolResult(call_id=call.call_id, output="20 + 22 = 42"),
        AssistantText(text="It is 42.", model=model),
    ]
