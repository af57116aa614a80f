"""`Toolbox.from_mcp` against a real MCP server written with the SDK's server side, over
stdio and streamable HTTP: specs, every kind of result, and a server that misbehaves."""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from nisse_llm import ConfigError, Toolbox, ToolCall, ToolResult, UpstreamUnavailable, defaults
from nisse_llm.events.tools import TOOL_NAME_PATTERN
from nisse_llm.mcp import McpServer
from tests.mcp.helpers import HttpTestServer, stdio_test_server

MIB = 1024 * 1024


def _call(box: Toolbox, tool: str, **arguments: object) -> ToolResult:
    (result,) = box.run([ToolCall(call_id="call_1", tool=tool, arguments=arguments)])
    assert result.call_id == "call_1"
    return result


@pytest.fixture(scope="module")
def stdio_box() -> Iterator[Toolbox]:
    """One started stdio server for the module's well-behaved calls."""
    with Toolbox.from_mcp(stdio_test_server()) as box:
        yield box


@pytest.fixture(params=["stdio", "http"])
def box(request: pytest.FixtureRequest, stdio_box: Toolbox) -> Iterator[Toolbox]:
    """The toolbox over each transport."""
    if request.param == "stdio":
        yield stdio_box
        return
    url = request.getfixturevalue("mcp_http_url")
    with Toolbox.from_mcp(McpServer.http(url, name="test")) as http:
        yield http


def test_specs_are_portable_named_for_the_providers_and_cleaned(box: Toolbox) -> None:
    """Every tool's spec has a name the providers accept, a portable schema, a description
    without terminal escapes; a dotted, slashed, too-long MCP name is mapped."""
    specs = {spec.name: spec for spec in box.specs}
    assert {"echo", "add", "picture", "readme", "refuse", "sleep", "big", "crash"} <= set(specs)
    assert all(re.match(TOOL_NAME_PATTERN, name) for name in specs)
    (dotted,) = [name for name in specs if name.startswith("repo_status_long")]
    assert specs[dotted].description == "Reads red text aloud."
    assert specs["echo"].parameters == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert _call(box, dotted).output == "dotted answered"


def test_annotations_say_which_tools_are_repeatable(box: Toolbox) -> None:
    """readOnlyHint and idempotentHint make a tool repeatable; no hint leaves it not."""
    assert box.repeatable == {"echo", "add"}


def test_text_structured_image_resource_and_error_results(box: Toolbox) -> None:
    """Text comes back as text, structured content as its JSON when there is no text, an
    image as an Image, an embedded resource under its URI, isError as an error result."""
    assert _call(box, "echo", text="hi") == ToolResult(call_id="call_1", output="hi")
    assert _call(box, "add", a=2, b=3).output == "2 + 3 = 5"
    assert _call(box, "environment").output.startswith("{")
    picture = _call(box, "picture", caption="a dot")
    assert picture.output == "a dot"
    (image,) = picture.images
    assert image.media_type == "image/png"
    assert image.dimensions == (4, 3)
    assert _call(box, "readme").output == "[resource file:///repo/README.md]\n# Hello"
    refused = _call(box, "refuse", reason="read-only repository")
    assert refused.is_error
    assert refused.output == "refused: read-only repository"


def test_bad_arguments_are_the_servers_error_result(box: Toolbox) -> None:
    """Arguments the server's schema rejects come back as an error result, not a raise."""
    result = _call(box, "echo", wrong=1)
    assert result.is_error
    assert "text" in result.output


def test_python_functions_and_mcp_tools_share_one_box() -> None:
    """Functions given beside the servers are answered by the same box."""

    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    with Toolbox.from_mcp(stdio_test_server(tools=["echo"]), tools=[shout]) as box:
        assert [spec.name for spec in box.specs] == ["shout", "echo"]
        calls = [
            ToolCall(call_id="a", tool="shout", arguments={"text": "x"}),
            ToolCall(call_id="b", tool="echo", arguments={"text": "y"}),
        ]
        assert [result.output for result in box.run(calls)] == ["X", "y"]


def test_a_box_dropped_without_close_stops_its_server() -> None:
    """Forgetting ``close`` leaks no server: collecting the box stops it."""
    box = Toolbox.from_mcp(stdio_test_server(tools=["pid"]))
    pid = int(_call(box, "pid").output)
    del box
    gc.collect()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_function_named_like_an_mcp_tool_is_refused_and_the_server_stopped() -> None:
    """Two tools of one name cannot share a box: ValueError, and the started server stops."""

    def echo(text: str) -> str:
        """A local echo."""
        return text

    before = _mcp_threads()
    with pytest.raises(ValueError, match="two tools are named 'echo'"):
        Toolbox.from_mcp(stdio_test_server(tools=["echo"]), tools=[echo])
    assert _mcp_threads() - before == set()


def test_a_tool_list_naming_a_missing_tool_is_a_config_error() -> None:
    """``tools=`` naming a tool the server lacks fails at start, naming what it has."""
    with pytest.raises(ConfigError, match=r"has no tool nope; it has: .*echo"):
        Toolbox.from_mcp(stdio_test_server(tools=["echo", "nope"]))


def test_a_server_that_never_answers_initialize_is_upstream_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command that starts but never speaks MCP fails after the start timeout, not never."""
    monkeypatch.setattr(defaults, "MCP_START_TIMEOUT_S", 2.0)
    mute = McpServer.stdio("sh", ["-c", "sleep 600"], name="mute")
    with pytest.raises(UpstreamUnavailable, match=r"'mute' did not start: no answer within 2s"):
        Toolbox.from_mcp(mute)


def test_closing_the_box_stops_the_servers_and_the_loop_thread() -> None:
    """After close, the stdio server's process is gone and the box's MCP thread too."""
    before = _mcp_threads()
    with Toolbox.from_mcp(stdio_test_server(tools=["pid"])) as box:
        pid = int(_call(box, "pid").output)
        os.kill(pid, 0)  # alive while the box is open
        assert len(_mcp_threads() - before) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _mcp_threads() - before == set()


def _mcp_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == "nisse-llm-mcp"}


def test_an_http_server_that_went_away_is_an_error_then_reconnected() -> None:
    """A call to an HTTP server that stopped is an error result; once it is back, the next
    call reconnects and is answered."""
    with HttpTestServer() as web, Toolbox.from_mcp(McpServer.http(web.url, name="web")) as box:
        assert _call(box, "echo", text="before").output == "before"
        web.stop()
        gone = _call(box, "echo", text="during")
        assert gone.is_error
        assert "MCP server 'web'" in gone.output
        web.start()
        assert _call(box, "echo", text="after").output == "after"


def test_a_server_that_does_not_start_is_upstream_unavailable() -> None:
    """A command that exits at once is `UpstreamUnavailable`, naming the server and its stderr."""
    broken = McpServer.stdio("sh", ["-c", "echo no such repository >&2; exit 2"], name="broken")
    with pytest.raises(UpstreamUnavailable, match=r"'broken' did not start.*no such repository"):
        Toolbox.from_mcp(broken)


def test_two_servers_clashing_on_a_name_get_prefixed() -> None:
    """Two servers offering the same tool name each get their tool, prefixed by server."""
    with Toolbox.from_mcp(
        stdio_test_server(name="one", tools=["echo"]),
        stdio_test_server(name="two", tools=["echo"]),
    ) as box:
        assert [spec.name for spec in box.specs] == ["one__echo", "two__echo"]
        assert _call(box, "two__echo", text="from two").output == "from two"


async def test_the_async_form_starts_and_answers_inside_a_loop() -> None:
    """`afrom_mcp` and `arun` serve a running event loop, and `aclose` stops the server."""
    box = await Toolbox.afrom_mcp(stdio_test_server(tools=["echo"]))
    try:
        (result,) = await box.arun([ToolCall(call_id="c", tool="echo", arguments={"text": "a"})])
        assert result.output == "a"
    finally:
        await box.aclose()
    (closed,) = await box.arun([ToolCall(call_id="c", tool="echo", arguments={"text": "a"})])
    assert closed.is_error


def test_a_call_past_its_timeout_is_an_error_and_the_server_restarts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tool sleeping past ``timeout_s`` is an error result and a WARNING; the next call
    starts the server again and is answered."""
    with Toolbox.from_mcp(stdio_test_server(timeout_s=2)) as box, caplog.at_level(logging.WARNING):
        slow = _call(box, "sleep", seconds=60)
        assert slow.is_error
        assert "no answer within 2s" in slow.output
        assert _call(box, "echo", text="again").output == "again"
    (warning,) = [r for r in caplog.records if r.name == "nisse_llm.mcp"]
    assert warning.levelno == logging.WARNING
    assert "'test' failed calling 'sleep'" in warning.getMessage()


def test_a_server_exiting_mid_call_is_an_error_and_the_next_call_restarts_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that dies during a call gives an error result (its stderr in the WARNING),
    and one restart serves the next call."""
    with Toolbox.from_mcp(stdio_test_server()) as box, caplog.at_level(logging.WARNING):
        crashed = _call(box, "crash")
        assert crashed.is_error
        assert "closed the connection" in crashed.output
        assert _call(box, "echo", text="alive").output == "alive"
    (warning,) = [r for r in caplog.records if r.name == "nisse_llm.mcp"]
    assert "about to crash" in warning.getMessage()


def test_calls_from_two_threads_after_a_crash_restart_the_server_once() -> None:
    """Two threads calling a server that died both reach one new process."""
    with Toolbox.from_mcp(stdio_test_server(tools=["crash", "pid"])) as box:
        assert _call(box, "crash").is_error
        with ThreadPoolExecutor(2) as pool:
            pids = set(pool.map(lambda _: _call(box, "pid").output, range(2)))
    assert len(pids) == 1


def test_a_50_mib_result_is_cut_to_the_cap_with_a_note(mcp_http_url: str) -> None:
    """A 50 MiB answer reaches the model as at most 4 MiB, saying how much was removed."""
    with Toolbox.from_mcp(McpServer.http(mcp_http_url, name="test")) as box:
        result = _call(box, "big", megabytes=50)
    assert not result.is_error
    kept, note = result.output.rsplit("\n", 1)
    assert kept == "x" * (4 * MIB)
    assert note == f"[result cut to {4 * MIB} bytes: {46 * MIB} bytes of text removed]"


def test_a_50_mib_result_over_stdio_is_bounded_by_the_timeout() -> None:
    """The SDK's stdio reader takes minutes over 50 MiB: the call's timeout ends it as an
    error result, and the server answers the next call."""
    with Toolbox.from_mcp(stdio_test_server(timeout_s=3)) as box:
        assert _call(box, "big", megabytes=50).is_error
        assert _call(box, "echo", text="next").output == "next"


def test_the_result_cap_is_the_servers_setting() -> None:
    """``max_result_bytes`` cuts a result to that many bytes of text."""
    with Toolbox.from_mcp(stdio_test_server(max_result_bytes=1000, tools=["big"])) as box:
        result = _call(box, "big", megabytes=1)
    assert result.output.startswith("x" * 1000 + "\n[result cut to 1000 bytes")


def test_stderr_is_captured_and_bounded() -> None:
    """A server writing 512 KiB to stderr keeps working; only the last 64 KiB are held."""
    with stdio_test_server(tools=["shout"]).connect() as connection:
        (shout,) = connection.tools
        assert shout({"kilobytes": 512}).output == "shouted"
        tail = connection.stderr("test")
    assert tail.endswith("last words")
    assert len(tail.encode()) <= 64 * 1024


def test_the_token_never_reaches_the_servers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The proxy token and a store's credentials in the agent's environment are not in the
    server's, unless the operator names them in ``env``."""
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-secret-token")
    monkeypatch.setenv("NISSE_TASK_STORE_URL", "redis://:hunter2@localhost/0")
    with Toolbox.from_mcp(stdio_test_server(tools=["environment"])) as box:
        seen = _call(box, "environment").output
    assert "sk-secret-token" not in seen
    assert "hunter2" not in seen
    assert "PATH" in json.loads(seen)
    named = stdio_test_server(tools=["environment"], env={"NISSE_LLM_TOKEN": "sk-named"})
    with Toolbox.from_mcp(named) as box:
        assert json.loads(_call(box, "environment").output)["NISSE_LLM_TOKEN"] == "sk-named"


def test_the_package_imports_without_the_sdk_and_says_which_extra_to_install() -> None:
    """Without the mcp SDK, nisse_llm and McpServer import; starting a server is an
    ImportError naming the extra."""
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None\n"
        "from nisse_llm import McpServer, Toolbox\n"
        "server = McpServer.stdio('mcp-server-git')\n"
        "try:\n"
        "    Toolbox.from_mcp(server)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == (
        "MCP servers need the mcp extra (mcp is missing): pip install 'nisse-llm[mcp]'"
    )
