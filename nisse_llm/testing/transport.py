"""An in-process httpx transport that answers from a `Script`: no server, no socket.

Pass it as ``transport=`` to any nisse_llm client (or any httpx client, sync or
async). A delay longer than the request's read timeout raises ``httpx.ReadTimeout``
after that timeout, as a real socket would; a `Disconnect` raises
``httpx.RemoteProtocolError``; a body broken mid-way (`cut_after`, `stalled_after`)
raises the same errors while the body is read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator

import httpx

from nisse_llm._drive import adrive, drive
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

    def answer(self, request: httpx.Request, body: bytes) -> ScriptedAnswer:
        """The script's answer to one request (a subclass may pick the turn itself)."""
        return self.script.respond(
            request.method, request.url.raw_path.decode(), request.headers.multi_items(), body
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Record the request and answer it with the script's next turn."""
        return drive(self._handling(request, request.read()), self._sleep)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record the request and answer it with the script's next turn."""
        return await adrive(self._handling(request, await request.aread()), asyncio.sleep)

    def _handling(
        self, request: httpx.Request, body: bytes
    ) -> Generator[float, None, httpx.Response]:
        """The answer to one request; it yields the wait before it, if any (sans-I/O: the
        sync and async handlers sleep as they do)."""
        answer = self.answer(request, body)
        wait, timed_out = _wait_for(answer, request)
        if wait:
            yield wait
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
    if answer.break_at is None or answer.clean_cut:
        body = answer.body if answer.break_at is None else answer.body[: answer.break_at]
        return httpx.Response(
            answer.status, headers=list(answer.headers), content=body, request=request
        )
    return httpx.Response(
        answer.status,
        headers=list(answer.headers),
        stream=_BrokenBody(answer, request),
        request=request,
    )


class _BrokenBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that stops after ``break_at`` bytes: dropped, or silent for ``stall_s``."""

    def __init__(self, answer: ScriptedAnswer, request: httpx.Request) -> None:
        self._answer = answer
        self._request = request

    def _pause(self) -> float:
        """How long the body goes silent; raises at once for a cut."""
        stall = self._answer.stall_s
        if stall is None:
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body",
                request=self._request,
            )
        read = self._request.extensions.get("timeout", {}).get("read")
        return stall if read is None else min(stall, float(read))

    def _rest(self) -> bytes:
        answer = self._answer
        read = self._request.extensions.get("timeout", {}).get("read")
        if answer.stall_s is not None and read is not None and answer.stall_s > read:
            raise httpx.ReadTimeout("scripted upstream stalled mid-body", request=self._request)
        return answer.body[answer.break_at :]

    def __iter__(self) -> Iterator[bytes]:
        yield self._answer.body[: self._answer.break_at]
        time.sleep(self._pause())
        yield self._rest()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._answer.body[: self._answer.break_at]
        await asyncio.sleep(self._pause())
        yield self._rest()
