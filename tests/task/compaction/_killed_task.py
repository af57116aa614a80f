"""A task the kill tests SIGKILL at one moment: mid-call, mid-compaction or mid-append.

Run as ``python -m tests.task.compaction._killed_task MODE PATH``. Every mode first makes one
call that ends (a tool call, whose result is appended), then prints ``ready`` at the
moment to be killed and waits there:

- ``call``: the second call's request has left (its start is recorded); no answer comes.
- ``compaction``: the second call is refused as too long; the router compacts and asks
  the delegate for a summary, whose request never gets an answer.
- ``retry``: as ``compaction``, but eliding the tool output is enough (no summary is
  needed): the compaction is recorded and the retried call's request never gets an answer.
- ``append``: a compaction is being appended; half its line is written.
"""

from __future__ import annotations

import os
import sys
import time

import httpx

from nisse_llm.events.canonical import CanonicalEvent, ToolCall, ToolResult, UserText
from nisse_llm.task.compaction import compact, estimate_log_tokens
from nisse_llm.task.logstore import FileTaskStore, TaskStore
from nisse_llm.task.summaries import CompactionPolicy
from nisse_llm.testing import Script, ScriptedTransport, Tokens, ToolUse, anthropic_failure, reply
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import READ_FILE
from tests.task.helpers import make_pin

QUESTION = "Why does test_add fail?"
FIRST_USAGE = Tokens(input=120, output=15)
#: The file's text the first tool call gets (long, so a compaction has something to elide).
SOURCE = "def add(a, b):\n    return a - b\n" * 60
OVERFLOW = "prompt is too long: 213369 tokens > 200000 maximum"


class _HangAfter(httpx.BaseTransport):
    """The script's transport for the first ``n`` route requests, then a request that never
    returns (announced with ``ready``)."""

    def __init__(self, inner: httpx.BaseTransport, n: int) -> None:
        self._inner = inner
        self._left = n

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(("/chat/completions", "/v1/messages")):
            if self._left == 0:
                print("ready", flush=True)
                time.sleep(60)
            self._left -= 1
        return self._inner.handle_request(request)


def _first_turn(store: TaskStore, llm: RoleRouter) -> list[CanonicalEvent]:
    log: list[CanonicalEvent] = [store.append_event(UserText(text=QUESTION)).event]
    answer = llm.complete("planner", log, [READ_FILE])
    store.append_events(answer)
    call = next(e for e in answer if isinstance(e, ToolCall))
    result = store.append_event(ToolResult(call_id=call.call_id, output=SOURCE)).event
    return [*log, *answer, result, store.append_event(UserText(text="And now?")).event]


def main(mode: str, path: str) -> None:
    pin = make_pin()
    store = FileTaskStore(path).begin(pin)
    said = "Let me read it." if mode != "compaction" else "Let me read it. " * 100
    script = Script().messages(
        reply(said, ToolUse("read_file", {"path": "add.py"}), usage=FIRST_USAGE),
        anthropic_failure(400, "invalid_request_error", OVERFLOW),
    )
    policy = CompactionPolicy(keep_last_turns=1, summarize_role="delegate", summary_tokens=100)
    hang = {"compaction": 2, "retry": 2}.get(mode, 1)
    transport = _HangAfter(ScriptedTransport(script), hang)
    with RoleRouter.from_pin(pin, store=store, compaction=policy, transport=transport) as llm:
        log = _first_turn(store, llm)
        if mode in ("call", "compaction", "retry"):
            llm.complete("planner", log, [READ_FILE])
        elif mode == "append":
            short = compact(log, budget_tokens=estimate_log_tokens(log) // 3, keep_last_turns=1)
            real_write = os.write

            def half_then_wait(fd: int, data: bytes) -> int:  # type: ignore[override]
                real_write(fd, bytes(data[: len(data) // 2]))
                os.fsync(fd)
                print("ready", flush=True)
                time.sleep(60)
                return 0

            os.write = half_then_wait  # type: ignore[assignment]
            store.append_compaction(short)
    raise SystemExit("not killed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
