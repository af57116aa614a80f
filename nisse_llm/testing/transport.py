"""An in-process httpx transport that answers from a `Script`: no server, no socket.

Pass it as ``transport=`` to any nisse_llm client (or any httpx client, sync or
async). A delay longer than the request's read timeout raises ``httpx.ReadTimeout``
after that timeout, as a real socket would; a `Disconnect` raises
``httpx.RemoteProtocolError``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

from nisse_llm.testing.script import Script, ScriptedAnswer

__all__ = ["ScriptedTransport"]


class ScriptedTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answers every request from a script; usable by sync and async httpx clients."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        #: The script answered from (a new empty one unless given).
        self.script = script if script is not None else Script()
        self._sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Record the request and answer it with the script's next turn."""
        answer = self.script.respond(
            request.method,
            request.url.raw_path.decode(),
            request.headers.multi_items(),
            request.read(),
        )
        wait, timed_out = _wait_for(answer, request)
        if wait:
            self._sleep(wait)
        return _finish(answer, request, timed_out)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record the request and answer it with the script's next turn."""
        body = await request.aread()
        answer = self.script.respond(
            request.method, request.url.raw_path.decode(), request.headers.multi_items(), body
        )
        wait, timed_out = _wait_for(answer, request)
        if wait:
            await asyncio.sleep(wait)
        return _finish(answer, request, timed_out)


def _wait_for(answer: ScriptedAnswer, request: httpx.Request) -> tuple[float, bool]:
    read_timeout = request.extensions.get("timeout", {}).get("read")
    if read_timeout is not None and answer.delay_s > read_timeout:
        return float(read_timeout), True
    return answer.delay_s, False


def _finish(answer: ScriptedAnswer, request: httpx.Request, timed_out: bool) -> httpx.Response:
    if timed_out:
        raise httpx.ReadTimeout(
            "scripted upstream answered after the read timeout", request=request
        )
    if answer.disconnect:
        raise httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        )
    return httpx.Response(
        answer.status, headers=list(answer.headers), content=answer.body, request=request
    )
