"""`Toolbox`: the model's tool calls dispatched to Python functions, answered as `ToolResult`s.

A helper for the agent's own loop, not a framework: ``log += toolbox.run(reply)`` runs
every `ToolCall` in ``reply`` and returns one `ToolResult` per call, in order. What the
model got wrong comes back to the model, never as an exception in the agent:

- arguments that do not validate: an error result listing each problem and the schema's
  expectations, so the next turn can fix them;
- a tool name the box does not hold: an error result naming the tools it does hold;
- a tool that raises: an error result with the exception's type and message (or, with
  ``propagate_errors=True``, the exception itself).

A tool's return value becomes the result's text deterministically: a ``str`` as it is,
``bytes`` decoded as UTF-8 (invalid bytes replaced), anything else as compact JSON
(pydantic's serializer: models, dataclasses, dates, sets...; ``None`` is ``null``). An
`Image`, or a list or tuple of strings and images holding at least one image, becomes the
result's ``images`` beside the strings joined by newlines (a screenshot tool, say). A
`ToolResult` is the answer as it is (what an MCP tool returns, its own errors included).

`Toolbox.from_mcp` adds the tools of MCP servers (`McpServer`, the ``mcp`` extra) beside the
functions: the same `specs`, `run` and `arun`; `close` (or leaving a ``with``) stops them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, RootModel, ValidationError

from nisse_llm import _telemetry
from nisse_llm._closing import Closing
from nisse_llm._drive import adrive, drive
from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult, ToolSpec
from nisse_llm.events.images import Image
from nisse_llm.events.tool_text import result_text, validation_feedback
from nisse_llm.events.tools import arguments_model, strict_problem

if TYPE_CHECKING:
    from nisse_llm._telemetry import ToolTrace
    from nisse_llm.mcp.connection import McpConnection
    from nisse_llm.mcp.server import McpServer

__all__ = ["Toolbox"]


@dataclass(frozen=True, slots=True)
class _Tool:
    spec: ToolSpec
    fn: Callable[..., Any]
    arguments: type[BaseModel]
    positional: tuple[bool, ...]  # per field: pass positionally (a positional-only parameter)
    is_async: bool
    server: str | None = None  # the MCP server answering it, if any


class _McpArguments(RootModel[dict[str, Any]]):
    """An MCP tool's arguments, passed whole: its server checks them against its schema."""


def _entry(fn: Callable[..., Any]) -> _Tool:
    parameters = inspect.signature(fn).parameters.values()
    return _Tool(
        spec=ToolSpec.from_function(fn),
        fn=fn,
        arguments=arguments_model(fn),
        positional=tuple(p.kind is p.POSITIONAL_ONLY for p in parameters),
        is_async=inspect.iscoroutinefunction(fn),
    )


def _result(call: ToolCall, value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value.model_copy(update={"call_id": call.call_id})
    parts = value if isinstance(value, list | tuple) else (value,)
    images = tuple(part for part in parts if isinstance(part, Image))
    if images and all(isinstance(part, Image | str) for part in parts):
        text = "\n".join(part for part in parts if isinstance(part, str))
        return ToolResult(call_id=call.call_id, output=text, images=images)
    return ToolResult(call_id=call.call_id, output=result_text(value))


def _answered(call: ToolCall, value: Any) -> tuple[ToolResult, str | None]:
    """The result of a tool that returned, and its failure kind when it answered an error
    result itself (an MCP tool's ``isError``, or its server failing)."""
    result = _result(call, value)
    return result, "tool_error" if result.is_error else None


logger = logging.getLogger("nisse_llm")


class Toolbox(Closing):
    """Python functions as tools: their `specs`, and `run` / `arun` to answer tool calls.

    ``Toolbox([read_file, write_file])``; each function's spec comes from
    `ToolSpec.from_function`. ``propagate_errors=True`` lets a tool's exception reach the
    caller instead of becoming an error result (validation and unknown names stay results).
    ``repeatable`` names the tools that may run again when a run was cut and its outcome is
    unknown (reads, test runs; see `is_repeatable`); a tool is not repeatable by default.
    ``strict`` (default) marks each tool whose schema fits strict mode as it is to be sent
    ``strict: true`` where the route and model take it (`ToolSpec.strict`); a tool that
    does not fit is sent as before, and why is logged at DEBUG; ``strict=False`` opts out.
    ``needs_approval`` names the tools a task runs only after a person approves the call
    (``task.approve``; see `nisse_llm.task.approvals`): a run stops with such a call
    pending, and the calls beside it run as usual.
    """

    def __init__(
        self,
        tools: Iterable[Callable[..., Any]],
        *,
        propagate_errors: bool = False,
        repeatable: Iterable[str] = (),
        strict: bool = True,
        needs_approval: Iterable[str] = (),
    ) -> None:
        #: Whether tools whose schema fits strict mode are sent strict (where the route
        #: and model take it; see `ToolSpec.strict`).
        self.strict = strict
        self._tools: dict[str, _Tool] = {}
        for fn in tools:
            self._add(_entry(fn))
        self.propagate_errors = propagate_errors
        self.repeatable: frozenset[str] = frozenset()
        self._connections: list[McpConnection] = []
        self._mark_repeatable(repeatable)
        #: The tools whose calls run only once a person approves them (`needs_approval`).
        self.approval_needed = self._tool_names("needs_approval", needs_approval)

    def _tool_names(self, what: str, names: Iterable[str]) -> frozenset[str]:
        """``names``, each the name of a tool of the box (`ValueError` naming the others)."""
        if isinstance(names, str):
            raise TypeError(f"{what} holds tool names: write {{{names!r}}}")
        marked = frozenset(names)
        unknown = sorted(marked - set(self._tools))
        if unknown:
            raise ValueError(f"{what} names no tool of the box: {', '.join(unknown)}")
        return marked

    def _mark_repeatable(self, names: Iterable[str]) -> None:
        #: The names given as ``repeatable``, and the MCP tools their servers mark read-only
        #: or idempotent (see `is_repeatable`).
        self.repeatable |= self._tool_names("repeatable", names)

    @classmethod
    def delegation(
        cls,
        task: Any,
        role: str,
        *,
        tools: Any,
        system: str | None = None,
        name: str | None = None,
    ) -> Toolbox:
        """A box of one tool, ``delegate_to_<role>(prompt)`` (or ``name``), through which the
        model hands a sub-task to ``role``: ``task.delegate(role, prompt, tools=tools,
        system=system)`` (a `Task`'s or an `AsyncTask`'s), its answer's text the result.
        Repeatable: a run of it cut by a kill runs again, and the delegation's replay
        resumes the same child rather than beginning another."""
        named = name or f"delegate_to_{role}"
        if inspect.iscoroutinefunction(task.delegate):

            async def handed(prompt: str) -> str:
                return str((await task.delegate(role, prompt, tools=tools, system=system)).text)

            run: Callable[..., Any] = handed
        else:

            def handed_sync(prompt: str) -> str:
                return str(task.delegate(role, prompt, tools=tools, system=system).text)

            run = handed_sync
        run.__name__ = run.__qualname__ = named
        run.__doc__ = f"Hand a sub-task to the {role}: say what to do; its answer comes back."
        return cls([run], repeatable={named})

    def needs_approval(self, name: str) -> bool:
        """Whether a call of the tool ``name`` runs only once a person approves it."""
        return name in self.approval_needed

    def is_repeatable(self, name: str) -> bool:
        """Whether the tool ``name`` may run again when its outcome is unknown: named in
        ``repeatable`` (or, for an MCP tool, marked read-only or idempotent by its server)."""
        return name in self.repeatable

    def _add(self, entry: _Tool) -> None:
        if entry.spec.name in self._tools:
            raise ValueError(f"two tools are named {entry.spec.name!r}")
        if self.strict:
            problem = strict_problem(entry.spec.parameters)
            if problem is None:
                strict = entry.spec.model_copy(update={"strict": True})
                entry = dataclasses.replace(entry, spec=strict)
            else:
                logger.debug("tool %r is not sent strict: %s", entry.spec.name, problem)
        self._tools[entry.spec.name] = entry

    @classmethod
    def from_mcp(
        cls,
        *servers: McpServer,
        tools: Iterable[Callable[..., Any]] = (),
        propagate_errors: bool = False,
        repeatable: Iterable[str] = (),
        strict: bool = True,
        needs_approval: Iterable[str] = (),
    ) -> Toolbox:
        """The tools of ``servers`` (started now, stopped by `close`) beside the functions
        ``tools``. A tool its server marks read-only or idempotent is ``repeatable``;
        ``needs_approval`` as for the constructor.

        Raises `UpstreamUnavailable` when a server does not start or list its tools.
        """
        box = cls(tools, propagate_errors=propagate_errors, strict=strict)
        if servers:
            first, *more = servers
            box._serve(first.connect(*more))
        box._mark_repeatable(repeatable)
        box.approval_needed = box._tool_names("needs_approval", needs_approval)
        return box

    @classmethod
    async def afrom_mcp(
        cls,
        *servers: McpServer,
        tools: Iterable[Callable[..., Any]] = (),
        propagate_errors: bool = False,
        repeatable: Iterable[str] = (),
        strict: bool = True,
        needs_approval: Iterable[str] = (),
    ) -> Toolbox:
        """`from_mcp` for asyncio: the servers start without blocking the running loop."""
        box = cls(tools, propagate_errors=propagate_errors, strict=strict)
        if servers:
            first, *more = servers
            box._serve(await first.aconnect(*more))
        box._mark_repeatable(repeatable)
        box.approval_needed = box._tool_names("needs_approval", needs_approval)
        return box

    def _serve(self, connection: McpConnection) -> None:
        """Answer the tools of ``connection`` (and close it with the box)."""
        self._connections.append(connection)
        try:
            for tool in connection.tools:
                self._add(
                    _Tool(
                        tool.spec, tool, _McpArguments, (True,), is_async=False, server=tool.server
                    )
                )
        except ValueError:
            self.close()
            raise
        self.repeatable |= {tool.spec.name for tool in connection.tools if tool.repeatable}

    def close(self) -> None:
        """Stop the MCP servers the box started (nothing to do for functions alone)."""
        while self._connections:
            self._connections.pop().close()

    async def aclose(self) -> None:
        """`close` for asyncio, in a worker thread (the servers take a moment to stop)."""
        await asyncio.to_thread(self.close)

    @property
    def specs(self) -> list[ToolSpec]:
        """The tools' specs, in the order given: pass them as ``tools`` to ``complete``."""
        return [tool.spec for tool in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        return f"Toolbox({list(self._tools)!r})"

    def _prepare(self, call: ToolCall) -> tuple[_Tool, list[Any], dict[str, Any]] | ToolResult:
        tool = self._tools.get(call.tool)
        if tool is None:
            known = ", ".join(repr(name) for name in self._tools) or "none"
            return ToolResult(
                call_id=call.call_id,
                output=f"Unknown tool {call.tool!r}. Available tools: {known}.",
                is_error=True,
            )
        try:
            bound = tool.arguments.model_validate(call.arguments)
        except ValidationError as exc:
            return ToolResult(
                call_id=call.call_id, output=validation_feedback(call.tool, exc), is_error=True
            )
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for (field, info), positional in zip(
            type(bound).model_fields.items(), tool.positional, strict=True
        ):
            value = getattr(bound, field)
            if positional:
                args.append(value)
            else:
                kwargs[info.alias or field] = value
        return tool, args, kwargs

    def _failed(self, call: ToolCall, exc: Exception) -> ToolResult:
        if self.propagate_errors:
            raise exc
        detail = str(exc) or "no message"
        return ToolResult(
            call_id=call.call_id,
            output=f"Tool {call.tool!r} failed: {type(exc).__name__}: {detail}",
            is_error=True,
        )

    def run(self, events: Sequence[CanonicalEvent] | Iterable[CanonicalEvent]) -> list[ToolResult]:
        """Run every `ToolCall` in ``events`` (others are ignored), one result per call in order.

        An async tool runs in a fresh event loop; inside a running loop use `arun`.
        """
        return drive(self._runs(events), self._run_one)

    def _runs(
        self, events: Iterable[CanonicalEvent]
    ) -> Generator[ToolCall, tuple[ToolResult, str | None], list[ToolResult]]:
        """The run of every call, each traced: it yields the call to run and is sent its
        result and what failed (sans-I/O, so `run` and `arun` share it)."""
        results: list[ToolResult] = []
        for call in _calls(events):
            with self._trace(call) as span:
                result, error_type = yield call
                span.ended(result, error_type)
            results.append(result)
        return results

    def _run_one(self, call: ToolCall) -> tuple[ToolResult, str | None]:
        """One call's result, and what failed (None for a success)."""
        prepared = self._prepare(call)
        if isinstance(prepared, ToolResult):
            return prepared, _refusal_kind(prepared)
        tool, args, kwargs = prepared
        if tool.is_async and _loop_running():
            raise RuntimeError(
                f"tool {call.tool!r} is async and an event loop is running: "
                "use `await toolbox.arun(...)`"
            )
        try:
            value = tool.fn(*args, **kwargs)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except Exception as exc:
            return self._failed(call, exc), type(exc).__name__
        return _answered(call, value)

    async def arun(
        self, events: Sequence[CanonicalEvent] | Iterable[CanonicalEvent]
    ) -> list[ToolResult]:
        """`run` for asyncio: async tools are awaited, sync ones run in a worker thread.

        Calls run one after another, in order, as the model listed them.
        """
        return await adrive(self._runs(events), self._arun_one)

    async def _arun_one(self, call: ToolCall) -> tuple[ToolResult, str | None]:
        prepared = self._prepare(call)
        if isinstance(prepared, ToolResult):
            return prepared, _refusal_kind(prepared)
        tool, args, kwargs = prepared
        try:
            if tool.is_async:
                value = await tool.fn(*args, **kwargs)
            else:
                value = await asyncio.to_thread(tool.fn, *args, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            return self._failed(call, exc), type(exc).__name__
        return _answered(call, value)

    def _trace(self, call: ToolCall) -> AbstractContextManager[ToolTrace]:
        """The span of ``call``'s run: the tracer's while telemetry is on, else a no-op."""
        tracer = _telemetry.tracer
        if tracer is None:
            return _UNTRACED
        tool = self._tools.get(call.tool)
        if tool is None:
            return tracer.tool(call, None)
        return tracer.tool(call, tool.spec, server=tool.server)


def _calls(events: Iterable[CanonicalEvent]) -> Iterator[ToolCall]:
    return (event for event in events if isinstance(event, ToolCall))


class _Untraced(AbstractContextManager["_Untraced"]):
    """A tool run's span while telemetry is off: it records nothing."""

    def __exit__(self, *exc: object) -> None:
        return None

    def ended(self, result: ToolResult, error_type: str | None) -> None:
        return None


_UNTRACED = _Untraced()


def _refusal_kind(result: ToolResult) -> str:
    """What a result made before running names as its failure: an unknown tool or bad arguments."""
    return "unknown_tool" if result.output.startswith("Unknown tool") else "invalid_arguments"


async def _awaited(value: Any) -> Any:
    return await value


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
