"""A scripted agent of several steps, SIGKILLed at its ``kill_at``-th kill point.

`run_agent` opens the task with `Task.open` and runs it to the end, unless it reaches its
``kill_at``-th point first, where it notes the point and sends itself SIGKILL (the same
signal another process would send; nothing is flushed or closed). The points, in the
order a run passes them: before each record's write and in the middle of it (half the
line written and fsynced), as each model request has left and as its reply has come
back, and before and after each tool's side effect.

The upstream answers as a function of the request alone (which step the last tool
results name), so a model call made again after a kill gets the same reply. The agent:
a repeatable ``read_file`` and a non-repeatable ``write_file`` in parallel at each of
three steps, each appending to the side-effect file; a large read at step 2 makes the
step-4 request too long for the model, and the router compacts it (eliding the output).
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from nisse_llm.agent import Task
from nisse_llm.task.summaries import CompactionPolicy
from nisse_llm.testing import (
    RecordedRequest,
    Script,
    ScriptedTransport,
    ToolUse,
    Turn,
    anthropic_failure,
    reply,
)
from nisse_llm.tools import Toolbox
from nisse_llm.transport.routers import RoleRouter
from tests.task.helpers import make_pin

QUESTION = "Tidy the three modules."
ROLE = "planner"  # claude-sonnet-4-5: the messages route
FINAL = "All three modules are tidy."
BIG = "x = 1  # a long generated line to fill the window\n" * 120
#: A last request longer than this, with no output elided, is refused as too long.
WINDOW_BYTES = 6000
OVERFLOW = "prompt is too long: 213369 tokens > 200000 maximum"
_STEP = re.compile(r"s(\d)-")


def upstream(request: RecordedRequest) -> Turn:
    """The reply to a request: a function of the step its tool results reach."""
    steps = [int(m) for text in request.tool_results for m in _STEP.findall(text)]
    step = max(steps, default=0) + 1
    if step > 3:
        body = request.body.decode()
        if len(body) > WINDOW_BYTES and "elided" not in body:
            return anthropic_failure(400, "invalid_request_error", OVERFLOW)
        return reply(FINAL)
    read = "s2-big.txt" if step == 2 else f"s{step}-notes.txt"
    return reply(
        f"Step {step}.",
        ToolUse("read_file", {"path": read}),
        ToolUse("write_file", {"path": f"s{step}-out.py", "text": f"tidy {step}"}),
    )


class Points:
    """Counts kill points; SIGKILLs the process at the ``kill_at``-th (0: never)."""

    def __init__(self, kill_at: int, notes: Path) -> None:
        self.kill_at = kill_at
        self.notes = notes
        self.passed = 0
        #: Model calls whose start record is written and whose end record is not.
        self.in_flight = 0
        #: Whether a call's success is written and its reply not yet (a kill now loses it).
        self.unsaved = False

    def reached(self, kind: str) -> bool:
        """Count a point; True when it is the kill point (the caller then `kill`s)."""
        self.passed += 1
        return self.passed == self.kill_at

    def kill(self, kind: str) -> None:
        with self.notes.open("a", encoding="utf-8") as out:
            killed = {"kind": kind, "in_flight": self.in_flight, "unsaved": self.unsaved}
            out.write(json.dumps(killed) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

    def at(self, kind: str) -> None:
        if self.reached(kind):
            self.kill(kind)


class PointedTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A scripted upstream answering by ``fallback``, with a kill point as each model request
    (to a path ending in one of ``paths``) has left and as its reply has come back; for
    sync and async clients."""

    def __init__(
        self,
        points: Points,
        fallback: Callable[[RecordedRequest], Turn] = upstream,
        paths: tuple[str, ...] = ("/v1/messages",),
    ) -> None:
        self._inner = ScriptedTransport(Script(fallback=fallback))
        self._points = points
        self._paths = paths

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        model_call = request.url.path.endswith(self._paths)
        if model_call:
            self._points.at("call")
        response = self._inner.handle_request(request)
        if model_call:
            response.read()
            self._points.at("reply")
        return response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        model_call = request.url.path.endswith(self._paths)
        if model_call:
            self._points.at("call")
        response = await self._inner.handle_async_request(request)
        if model_call:
            await response.aread()
            self._points.at("reply")
        return response


def _pointed_write(points: Points, real: Callable[[int, Any], int]) -> Callable[[int, Any], int]:
    """``os.write`` with two kill points before each task-file record: before it and with
    half of it written."""

    def write(fd: int, data: Any) -> int:
        raw = bytes(data)
        if not raw.startswith(b'{"seq"'):
            return real(fd, data)
        points.at("append")
        if points.reached("mid-append"):
            real(fd, raw[: len(raw) // 2])
            os.fsync(fd)
            points.kill("mid-append")
        written = real(fd, data)
        for line in raw.splitlines():
            if b'"llm_call"' in line:
                points.in_flight += 1 if b'"outcome":"started"' in line else -1
                points.unsaved = b'"outcome":"ok"' in line
            elif b'"event"' in line or b'"batch"' in line:
                points.unsaved = False
        return written

    return write


def tools(points: Points, effects: Path) -> Toolbox:
    """``read_file`` (repeatable) and ``write_file``, each noting its run in ``effects``,
    with a kill point before and after the side effect."""

    def effect(tool: str, path: str) -> None:
        points.at(f"before-{tool}")
        with effects.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"tool": tool, "path": path}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        points.at(f"after-{tool}")

    def read_file(path: str) -> str:
        """Read a file."""
        effect("read_file", path)
        return f"notes of {path}\n" + (BIG if "big" in path else "")

    def write_file(path: str, text: str) -> str:
        """Write a file."""
        effect("write_file", path)
        return f"wrote {len(text)} characters to {path}"

    return Toolbox([read_file, write_file], repeatable={"read_file"})


def run_agent(path: str, effects: str, kill_at: int, notes: str) -> None:
    """Open the task and run it to the end (or to the kill point)."""
    points = Points(kill_at, Path(notes))
    os.write = _pointed_write(points, os.write)  # type: ignore[assignment]
    pin = make_pin()
    from nisse_llm.task.logstore import FileTaskStore

    store = FileTaskStore(path)
    policy = CompactionPolicy(keep_last_turns=1)
    with (
        RoleRouter.from_pin(
            pin, store=store, compaction=policy, transport=PointedTransport(points)
        ) as llm,
        Task.open(store, pin, router=llm, prompt=QUESTION) as task,
    ):
        task.run(ROLE, tools=tools(points, Path(effects)))
