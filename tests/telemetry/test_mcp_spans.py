"""An MCP tool call is an execute_tool span naming its server, under the agent's span."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from nisse_llm import Toolbox, ToolCall
from tests.mcp.helpers import stdio_test_server
from tests.telemetry.conftest import Telemetry, attributes


def test_an_mcp_call_is_an_execute_tool_span_naming_its_server(otel: Telemetry) -> None:
    """The span has the GenAI tool attributes, the MCP method and the server's name, and is
    a child of the span current when the toolbox ran."""
    tracer = otel.tracer_provider.get_tracer("agent")
    call = ToolCall(call_id="call_mcp", tool="echo", arguments={"text": "hi"})
    with (
        Toolbox.from_mcp(stdio_test_server(name="scratch", tools=["echo"])) as box,
        tracer.start_as_current_span("invoke_agent coder"),
    ):
        (result,) = box.run([call])
    assert result.output == "hi"
    tool, agent = otel.spans()
    assert tool.name == "execute_tool echo"
    assert tool.parent is not None
    assert tool.parent.span_id == agent.get_span_context().span_id
    assert attributes(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": "call_mcp",
        "gen_ai.tool.type": "extension",
        "gen_ai.tool.description": "Say the text back.",
        "mcp.method.name": "tools/call",
        "nisse_llm.mcp.server": "scratch",
    }


def test_an_mcp_error_result_marks_its_span_failed(otel: Telemetry) -> None:
    """A result the server flags as an error sets the span's error type and status."""
    call = ToolCall(call_id="call_no", tool="refuse", arguments={"reason": "read-only"})
    with Toolbox.from_mcp(stdio_test_server(tools=["refuse"])) as box:
        (result,) = box.run([call])
    assert result.is_error
    (span,) = otel.spans()
    assert attributes(span)["error.type"] == "tool_error"
    assert span.status.status_code is StatusCode.ERROR
