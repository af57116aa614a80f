"""A raw loopback socket server: it reads each request and answers with whatever bytes a
script writes, however malformed, slow or endless.

A `Script` gets a `Conn` (the socket, the request as received, and a stop flag) and writes
to it until it returns, the client hangs up or the server stops. Every request is kept
(`RawServer.requests`) so a test can assert what was sent, and to whom.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"


@dataclass
class Conn:
    """One accepted connection and the request read from it."""

    sock: socket.socket
    request: bytes
    stop: threading.Event

    def send(self, data: bytes) -> bool:
        """Send ``data``; False once the client has gone or the server stops."""
        if self.stop.is_set():
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def sleep(self, seconds: float) -> bool:
        """Wait, unless the server stops first; False if it did."""
        return not self.stop.wait(seconds)

    def header(self, name: str) -> str | None:
        """A request header's value (first match, name case-insensitive)."""
        head = self.request.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        for line in head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    @property
    def token(self) -> str:
        """The bearer token the request carried (empty if none)."""
        return (self.header("authorization") or "").removeprefix("Bearer ")


Script = Callable[[Conn], None]


class RawServer:
    """Accepts on 127.0.0.1 and a free port; each connection gets its own thread."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[bytes] = []
        self.connections = 0
        self.stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def close(self) -> None:
        """Stop every script, close every socket and join every thread."""
        self.stop.set()
        self._accepting.join(5)
        self._listener.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            self._socks.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        try:
            request = _read_request(sock)
            if request is None:
                return
            self.requests.append(request)
            self.script(Conn(sock, request, self.stop))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)


def _read_request(sock: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


# --- building blocks of scripts ----------------------------------------------------------


def head(status: int = 200, *headers: tuple[str, str], chunked: bool = True) -> bytes:
    """A status line and headers; ``chunked`` frames the body with chunked encoding."""
    lines = [f"HTTP/1.1 {status} X"]
    lines += [f"{name}: {value}" for name, value in headers]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def compress(data_size: int, wbits: int) -> bytes:
    """``data_size`` zero bytes compressed (wbits 31: gzip, 15: zlib deflate)."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    piece = bytes(1 << 20)
    parts = [c.compress(piece) for _ in range(data_size >> 20)]
    return b"".join([*parts, c.flush()])


ECHO_PLACES = ["status-line", "header", "content-length", "chunk-size", "reason-phrase"]


def echo(where: str) -> Script:
    """A server that echoes the caller's token in a malformed status line, header,
    Content-Length or chunk size, or in a reason phrase: where httpx, httpcore and h11
    quote what they reject."""

    def script(conn: Conn) -> None:
        token = conn.token
        if where == "status-line":
            conn.send(f"HTTP/1.1 2{token} OK\r\n\r\n".encode())
        elif where == "header":
            conn.send(f"HTTP/1.1 200 OK\r\nX-Key {token}\r\n\r\n".encode())
        elif where == "content-length":
            conn.send(f"HTTP/1.1 200 OK\r\nContent-Length: {token}\r\n\r\n".encode())
        elif where == "chunk-size":
            conn.send(head(200, ("Content-Type", "application/json")))
            conn.send(f"{token}\r\nxx\r\n".encode())
        elif where == "reason-phrase":
            body = b"bad"
            conn.send(
                f"HTTP/1.1 502 {token}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )

    return script


def whole(status: int, body: bytes, *headers: tuple[str, str]) -> Script:
    """Answer with ``body`` under Content-Length, then hang up."""

    def script(conn: Conn) -> None:
        conn.send(head(status, *headers, ("Content-Length", str(len(body))), chunked=False))
        conn.send(body)

    return script


def endless(status: int, piece: bytes, *headers: tuple[str, str], every_s: float = 0) -> Script:
    """A chunked body repeating ``piece`` forever (every ``every_s`` seconds if set)."""

    def script(conn: Conn) -> None:
        if not conn.send(head(status, *headers)):
            return
        framed = chunk(piece)
        while conn.send(framed):
            if every_s and not conn.sleep(every_s):
                return

    return script


def serving(script: Script) -> Iterator[RawServer]:
    """A fixture body: the server, closed afterwards."""
    server = RawServer(script)
    try:
        yield server
    finally:
        server.close()


def wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    """Poll ``predicate`` until it holds or the time is up."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
