"""A loopback HTTP server that answers from a `Script`: the upstream behind a real proxy.

It speaks ``POST /chat/completions`` (and ``/v1/chat/completions``) as an
OpenAI-compatible provider and ``POST /v1/messages`` as Anthropic, on
``127.0.0.1`` and a free port, one thread per connection.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from nisse_llm.testing._process import Started
from nisse_llm.testing.script import Script

__all__ = ["ScriptedServer"]

_CUT_DELAY_S = 0.2


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive, as providers do: clients (and the proxy) pool connections.
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr lines; the script records every request."""

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        body = self._body()
        answer = self.server.script.respond(self.command, self.path, self.headers.items(), body)
        if answer.delay_s and self.server.stopping.wait(answer.delay_s):
            self.close_connection = True
            return
        if answer.disconnect:
            self.close_connection = True
            return
        try:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            if answer.clean_cut and answer.break_at is not None:
                # A body delimited by the close: the peer sees it end, not break.
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(answer.body[: answer.break_at])
                self.close_connection = True
                return
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            if answer.break_at is None:
                self.wfile.write(answer.body)
                return
            self.wfile.write(answer.body[: answer.break_at])
            self.wfile.flush()
            # A cut ends the body short of its content-length, a moment after the last
            # bytes: a peer (aiohttp) that sees EOF with data unread drops that data.
            if self.server.stopping.wait(
                _CUT_DELAY_S if answer.stall_s is None else answer.stall_s
            ):
                return
            if answer.stall_s is None:
                self.close_connection = True
                return
            self.wfile.write(answer.body[answer.break_at :])
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a proxy timeout, for instance): nothing to tell it.
            self.close_connection = True

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle
    do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], script: Script) -> None:
        super().__init__(address, _Handler)
        self.script = script
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore peers that drop pooled connections; report anything else as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedServer(Started):
    """A threaded loopback server answering from a script; a context manager.

    ``base_url`` is ``http://127.0.0.1:<port>`` with no path: point a proxy's
    ``api_base`` (or a client's base URL) at it.
    """

    def __init__(
        self, script: Script | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        #: The script answered from (a new empty one unless given).
        self.script = script if script is not None else Script()
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (after `start`)."""
        if self._server is None:
            raise RuntimeError("ScriptedServer is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server."""
        return f"http://{self._address[0]}:{self.port}"

    def start(self) -> Self:
        """Bind and serve on a background thread; returns the server."""
        if self._server is not None:
            return self
        self._server = _Server(self._address, self.script)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-upstream-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; delayed answers in flight are dropped."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
