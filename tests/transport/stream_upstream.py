"""A loopback upstream that streams: each request is answered whole or as SSE, as it asks.

A `Body` plan answers a request that sends ``"stream": true`` with the body re-told by
`nisse_llm.testing.sse.sse_stream` (``text/event-stream``, chunked), and any other
request with the body as JSON: the same reply both ways. `Raw` sends given SSE bytes and
then ends them cleanly, cuts the connection, or stalls; `Error` answers before the first
byte. Writes that fail because the client left are counted in `aborted`.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from nisse_llm.config.routing import Route
from nisse_llm.testing.sse import split_bytes, sse_stream
from tests.transport.loopback import Captured

EVENT_STREAM = "text/event-stream"


@dataclass(frozen=True)
class Body:
    """Answer with this response body: streamed if the request asks for a stream, else whole."""

    body: Mapping[str, Any]
    chunk_size: int = 8
    write_size: int = 97


@dataclass(frozen=True)
class Raw:
    """Send these SSE bytes (``write_size`` per chunk, ``pause_s`` between), then ``end``.

    ``end``: ``"clean"`` finishes the chunked body; ``"cut"`` resets the connection;
    ``"stall"`` goes silent for ``stall_s`` before finishing.
    """

    data: bytes
    end: Literal["clean", "cut", "stall"] = "clean"
    stall_s: float = 0.0
    write_size: int = 97
    pause_s: float = 0.0


@dataclass(frozen=True)
class Error:
    """Answer before any stream starts: a status, a JSON body and headers."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


Plan = Body | Raw | Error


def route_of(path: str) -> Route:
    """The route a request path belongs to."""
    if path.endswith("/v1/messages"):
        return "anthropic_messages"
    return "openai_responses" if path.endswith("/v1/responses") else "openai_chat"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: StreamingUpstream

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the server records every request itself."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        seen = Captured("POST", self.path, headers, body)
        plan = self.server.record_and_plan(seen)
        try:
            self._answer(plan, seen)
        except (BrokenPipeError, ConnectionResetError):
            self.server.count_abort()
            self.close_connection = True

    def _answer(self, plan: Plan, seen: Captured) -> None:
        if isinstance(plan, Error):
            self._whole(plan.status, plan.body, plan.headers)
            return
        if isinstance(plan, Body):
            if seen.json().get("stream") is not True:
                self._whole(200, json.dumps(plan.body).encode(), ())
                return
            data = sse_stream(route_of(self.path), plan.body, chunk_size=plan.chunk_size)
            plan = Raw(data, write_size=plan.write_size)
        self.send_response(200)
        self.send_header("content-type", EVENT_STREAM)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        stopping = self.server.stopping
        for piece in split_bytes(plan.data, plan.write_size):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if plan.pause_s and stopping.wait(plan.pause_s):
                return
        if plan.end == "cut":
            # SO_LINGER with a zero timeout makes close() send RST rather than FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if plan.end == "stall" and stopping.wait(plan.stall_s):
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _whole(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StreamingUpstream(ThreadingHTTPServer):
    """The server; `plan` queues answers (a request with none queued is a test error)."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._plans: deque[Plan] = deque()
        self.requests: list[Captured] = []
        #: Answers abandoned by the client mid-write (it closed the connection).
        self.aborted = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def plan(self, *plans: Plan) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._plans.extend(plans)

    def record_and_plan(self, seen: Captured) -> Plan:
        """Record a request and take its plan."""
        with self._lock:
            self.requests.append(seen)
            if not self._plans:
                return Error(500, b'{"error": {"message": "no plan queued", "type": "test"}}')
            return self._plans.popleft()

    def count_abort(self) -> None:
        """Note one answer the client walked away from."""
        with self._lock:
            self.aborted += 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that timed out or was reset is part of the script."""


def serve() -> Iterator[StreamingUpstream]:
    """Run a server on a thread for the duration of a fixture, stopped within seconds."""
    server = StreamingUpstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
