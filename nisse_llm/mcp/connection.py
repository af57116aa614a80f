"""Running MCP servers: one background thread's event loop owns every session.

The SDK is async (anyio) and its sessions must be entered and left in one task, so each
server's session lives in a task of a loop of its own, on a daemon thread. A call from any
thread (`McpTool`, which the sync and async toolbox both call) is handed to that loop and
waited for. `McpConnection.close` leaves every session (stopping the stdio servers) and
ends the thread.

A call that times out, or finds the server gone, is an error result the model reads, and a
WARNING naming the server with the tail of its stderr; the server is then stopped, and
started again by the next call that needs it (one restart per call at most). The call that
failed is not sent again: the tool may not be safe to repeat.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, Tool

from nisse_llm import defaults
from nisse_llm._closing import Closing
from nisse_llm.errors import ConfigError, UpstreamUnavailable
from nisse_llm.events.canonical import ToolResult, mint_call_id
from nisse_llm.events.tools import ToolSpec, portable_schema
from nisse_llm.mcp.names import clean_text, provider_names
from nisse_llm.mcp.results import tool_result

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["McpConnection", "McpTool", "ServerSettings"]


class ServerSettings(Protocol):
    """What a connection reads of a server (`McpServer` is one): named here, so that
    `McpServer` can start connections without the two modules importing each other."""

    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> Literal["stdio", "http"]: ...
    @property
    def command(self) -> str | None: ...
    @property
    def args(self) -> tuple[str, ...]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def tools(self) -> tuple[str, ...] | None: ...
    @property
    def max_result_bytes(self) -> int: ...


logger = logging.getLogger("nisse_llm.mcp")
_T = TypeVar("_T")


class _StderrTail(asyncio.Protocol):
    """A stdio server's stderr, read from a pipe by the loop; only its last bytes are kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def data_received(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self) -> str:
        return clean_text(self.data.decode("utf-8", "replace")).strip()


class _Session:
    """One server's session, held open by a task of the connection's loop until stopped."""

    def __init__(self, server: ServerSettings) -> None:
        self.server = server
        self.session: ClientSession | None = None
        self.listed: list[Tool] = []
        self.stderr = _StderrTail(defaults.MCP_STDERR_BYTES)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()  # two calls finding the server gone start it once

    async def start(self) -> None:
        """Start the server, ``initialize`` and list its tools; `UpstreamUnavailable` if not."""
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), defaults.MCP_START_TIMEOUT_S)
        except Exception as exc:
            # Still starting (a server that never answers ``initialize``): nothing waits on
            # the stop event yet, so the task is cancelled, which ends the process too.
            if self._task is not None and not ready.done():
                self._task.cancel()
            await self.stop()
            raise UpstreamUnavailable(
                f"MCP server {self.server.name!r} did not start: {_why(exc)}{self._tail()}"
            ) from None

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(await self._transport(stack))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.listed = await _list_tools(session)
                self.session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None

    async def _transport(self, stack: AsyncExitStack) -> Any:
        server = self.server
        if server.transport == "http":
            assert server.url is not None
            # The SDK's read timeout (300 s: a server may hold its event stream open), or
            # longer when a call may take longer; the call's own timeout is ``timeout_s``.
            read = max(300.0, server.timeout_s + 5)
            client = create_mcp_http_client(
                headers=dict(server.headers), timeout=httpx2.Timeout(30.0, read=read)
            )
            stack.push_async_callback(client.aclose)
            return streamable_http_client(
                server.url, http_client=client, max_sse_event_size=defaults.MCP_MAX_MESSAGE_BYTES
            )
        assert server.command is not None
        # The server writes its stderr into a pipe the loop keeps reading (a full pipe would
        # block the server); the tail alone is kept.
        read_end, write_end = os.pipe()
        errlog = os.fdopen(write_end, "w")
        stack.callback(errlog.close)
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: self.stderr, os.fdopen(read_end, "rb", buffering=0)
        )
        stack.callback(pipe.close)
        params = StdioServerParameters(
            command=server.command, args=list(server.args), env=server.env, cwd=server.cwd
        )
        return stdio_client(params, errlog=errlog)

    async def stop(self) -> None:
        """Leave the session: the SDK closes the server's stdin, then terminates it."""
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def _tail(self) -> str:
        text = self.stderr.text()
        return f"; its stderr ends: {text[-2000:]}" if text else ""

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """The tool's result, or an error result saying why there is none."""
        server = self.server
        async with self._starting:
            if self.session is None:
                try:
                    await self.start()
                except UpstreamUnavailable as exc:
                    return self._failed(tool, f"it did not start again ({exc.message})")
        session = self.session
        assert session is not None
        try:
            async with asyncio.timeout(server.timeout_s):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            await self._retire(session)
            return self._failed(tool, f"no answer within {server.timeout_s:g}s")
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED:  # the server answered: the call was refused
                return _error(f"MCP server {server.name!r} refused {tool!r}: {exc.message}")
            await self._retire(session)
            return self._failed(tool, "the server closed the connection")
        except Exception as exc:
            await self._retire(session)
            return self._failed(tool, _why(exc))
        return tool_result(result, max_bytes=server.max_result_bytes)

    async def _retire(self, session: ClientSession) -> None:
        """Stop the server behind ``session``, unless another call has replaced it already."""
        if self.session is session:
            await self.stop()

    def _failed(self, tool: str, why: str) -> ToolResult:
        """An error result for the model, and a WARNING (with the stderr tail) for people."""
        logger.warning(
            "MCP server %r failed calling %r: %s%s", self.server.name, tool, why, self._tail()
        )
        return _error(
            f"Tool {tool!r} failed: MCP server {self.server.name!r}: {why}. "
            "It was stopped; the next call starts it again."
        )


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {defaults.MCP_START_TIMEOUT_S:g}s"
    inner = getattr(exc, "exceptions", None)  # a task group's ExceptionGroup: its first cause
    if inner:
        return _why(inner[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _error(text: str) -> ToolResult:
    return ToolResult(call_id=mint_call_id(), output=text, is_error=True)


async def _list_tools(session: ClientSession) -> list[Tool]:
    from mcp_types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor is not None:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    return tools


@dataclass(frozen=True, slots=True)
class McpTool:
    """One MCP tool as the model sees it (``spec``), and its call: ``tool(arguments)``."""

    spec: ToolSpec
    server: str
    #: The tool's own name on its server (``spec.name`` may differ: see `provider_names`).
    mcp_name: str
    #: The server says the tool only reads, or repeating it changes nothing more.
    repeatable: bool
    _connection: McpConnection
    _index: int

    def __call__(self, arguments: dict[str, Any]) -> ToolResult:
        return self._connection.call(self._index, self.mcp_name, arguments)


class McpConnection(Closing):
    """Started MCP servers and their `tools`, until `close` (which stops them)."""

    __slots__ = ("__weakref__", "_closed", "_finalizer", "_loop", "_sessions", "_thread", "tools")

    def __init__(self, servers: Sequence[ServerSettings]) -> None:
        names = [server.name for server in servers]
        if len(set(names)) < len(names):
            raise ValueError(f"two MCP servers share a name: {names}")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="nisse-llm-mcp", daemon=True
        )
        self._thread.start()
        self._sessions = tuple(_Session(server) for server in servers)
        self._closed = False
        self.tools: tuple[McpTool, ...] = ()
        # A connection dropped without close, or still open at exit, stops its servers too.
        self._finalizer = weakref.finalize(
            self, _shut_down, self._loop, self._thread, self._sessions
        )
        try:
            self._submit(self._open()).result()
        except BaseException:
            self.close()
            raise

    @classmethod
    async def astart(cls, servers: Sequence[ServerSettings]) -> McpConnection:
        """A connection started in a worker thread, so the running loop keeps running."""
        return await asyncio.to_thread(cls, servers)

    def _submit(self, coroutine: Coroutine[Any, Any, _T]) -> Future[_T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _open(self) -> None:
        await asyncio.gather(*(session.start() for session in self._sessions))
        self.tools = self._tools()

    def _tools(self) -> tuple[McpTool, ...]:
        chosen: list[tuple[int, Tool]] = []
        for index, session in enumerate(self._sessions):
            listed = {tool.name: tool for tool in session.listed}
            wanted = session.server.tools
            missing = sorted(set(wanted or ()) - set(listed))
            if missing:
                raise ConfigError(
                    f"MCP server {session.server.name!r} has no tool {', '.join(missing)}; "
                    f"it has: {', '.join(sorted(listed)) or 'none'}"
                )
            chosen.extend(
                (index, tool) for tool in session.listed if wanted is None or tool.name in wanted
            )
        names = provider_names((self._sessions[i].server.name, tool.name) for i, tool in chosen)
        return tuple(
            McpTool(
                spec=_spec(names.provider[(self._sessions[i].server.name, tool.name)], tool),
                server=self._sessions[i].server.name,
                mcp_name=tool.name,
                repeatable=_repeatable(tool),
                _connection=self,
                _index=i,
            )
            for i, tool in chosen
        )

    def call(self, index: int, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool`` on the ``index``-th server and wait for its result (any thread)."""
        if self._closed:
            return _error(f"Tool {tool!r} is unavailable: its MCP connection is closed.")
        return self._submit(self._sessions[index].call(tool, arguments)).result()

    def stderr(self, server: str) -> str:
        """The tail of ``server``'s stderr so far (cleaned of control characters)."""
        for session in self._sessions:
            if session.server.name == server:
                return session.stderr.text()
        raise KeyError(server)

    def close(self) -> None:
        """Stop every server, end the sessions and the loop's thread; idempotent."""
        self._closed = True
        self._finalizer()


def _shut_down(
    loop: asyncio.AbstractEventLoop, thread: threading.Thread, sessions: Sequence[_Session]
) -> None:
    if threading.current_thread() is thread:  # collected on the loop's own thread
        stopping = loop.create_task(_stop_all(sessions))
        stopping.add_done_callback(lambda _: loop.stop())
        return
    if thread.is_alive():
        asyncio.run_coroutine_threadsafe(_stop_all(sessions), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
    loop.close()


async def _stop_all(sessions: Sequence[_Session]) -> None:
    await asyncio.gather(*(session.stop() for session in sessions))


def _spec(name: str, tool: Tool) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=clean_text(tool.description or ""),
        parameters=portable_schema(tool.input_schema),
    )


def _repeatable(tool: Tool) -> bool:
    hints = tool.annotations
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)
