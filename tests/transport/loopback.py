"""A loopback proxy stand-in that misbehaves on command, for the client tests.

Requests are answered from a queue of `Reply`/`Reset` plans; with the queue empty it
echoes a valid completion for the route (the last user text, so a reply can be matched
to its request). ``@TOKEN@`` in a body becomes the token the request carried, as a
proxy that echoes credentials in its errors would do.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RESPONSES = Path(__file__).resolve().parent.parent / "fixtures" / "conformance" / "responses"
TOKEN_MARK = "@TOKEN@"


@dataclass(frozen=True)
class PerRoute:
    """A body that differs by route: ``chat`` for /chat/completions, ``messages`` for
    /v1/messages, ``responses`` for /v1/responses (the chat body when not given: error
    bodies are alike on the two OpenAI routes)."""

    chat: bytes
    messages: bytes
    responses: bytes | None = None


@dataclass(frozen=True)
class Reply:
    """Answer with this status, body and headers, after ``delay_s``."""

    status: int = 200
    body: bytes | PerRoute = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Reset:
    """Send a status line and part of a body, then reset the connection."""


Plan = Reply | Reset


@dataclass(frozen=True)
class Captured:
    """One request as the server saw it (header names lower-cased)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The request body, decoded."""
        return json.loads(self.body)


def fixture_body(name: str, *, echo_token: bool = False) -> bytes:
    """A recorded response body from the conformance kit; optionally echoing the token."""
    data = json.loads((RESPONSES / name).read_text())
    if echo_token:
        data["error"]["message"] += f" (key {TOKEN_MARK})"
    return json.dumps(data).encode()


def error_body(message: str, *, type_: str | None = "None", code: str = "400") -> bytes:
    """An error body in LiteLLM's own shape."""
    return json.dumps(
        {"error": {"message": message, "type": type_, "param": "None", "code": code}}
    ).encode()


def _last_user_text(request: Any) -> str:
    for item in reversed(request.get("input") or []):
        if item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content if p.get("type") == "input_text")
    for message in reversed(request.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        for block in content or []:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text"))
    return ""


def echo_completion(path: str, request: Any) -> bytes:
    """A valid completion naming the request's model, echoing its last user text.

    Output tokens are the echoed text's length, so usage can be matched to its call.
    """
    text = _last_user_text(request)
    model = request.get("model", "unknown")
    if path.endswith("/v1/responses"):
        return json.dumps(
            {
                "id": "resp_loopback",
                "object": "response",
                "created_at": 1767225600,
                "status": "completed",
                "model": model,
                "output": [
                    {
                        "id": "msg_loopback",
                        "type": "message",
                        "status": "completed",
                        "role": "assistant",
                        "content": [
                            {"type": "output_text", "annotations": [], "text": f"echo: {text}"}
                        ],
                    }
                ],
                "usage": {
                    "input_tokens": 11,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": len(text),
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 11 + len(text),
                },
            }
        ).encode()
    if path.endswith("/v1/messages"):
        return json.dumps(
            {
                "id": "msg_loopback",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": f"echo: {text}"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": len(text)},
            }
        ).encode()
    return json.dumps(
        {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "created": 1767225600,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"echo: {text}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 11,
                "completion_tokens": len(text),
                "total_tokens": 11 + len(text),
            },
        }
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, each reply waits on a delayed ACK.
    disable_nagle_algorithm = True
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the server records every request itself."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        seen = Captured(self.command, self.path, headers, body)
        plan = self.server.record_and_plan(seen)
        if isinstance(plan, Reset):
            self._reset()
            return
        if plan.delay_s and self.server.stopping.wait(plan.delay_s):
            self.close_connection = True
            return
        payload = plan.body
        if isinstance(payload, PerRoute):
            if self.path.endswith("/v1/messages"):
                payload = payload.messages
            elif self.path.endswith("/v1/responses") and payload.responses is not None:
                payload = payload.responses
            else:
                payload = payload.chat
        if not payload and plan.status == 200:
            payload = echo_completion(self.path, seen.json())
        token = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        payload = payload.replace(TOKEN_MARK.encode(), token.encode())
        try:
            self.send_response(plan.status)
            for name, value in plan.headers:
                self.send_header(name, value)
            self.send_header("content-type", plan.content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST  # the proxy's model list is a GET

    def _reset(self) -> None:
        self.wfile.write(b'HTTP/1.1 200 OK\r\ncontent-length: 4096\r\n\r\n{"id": "chatc')
        self.wfile.flush()
        # SO_LINGER with a zero timeout makes close() send RST rather than FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True


class LoopbackServer(ThreadingHTTPServer):
    """The server; `plan` queues answers, `requests` lists what arrived."""

    daemon_threads = True
    block_on_close = False
    # A hundred concurrent clients connect at once; the default backlog of 5 drops SYNs.
    request_queue_size = 256

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._plans: deque[Plan] = deque()
        self.requests: list[Captured] = []

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def plan(self, *plans: Plan) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._plans.extend(plans)

    def record_and_plan(self, seen: Captured) -> Plan:
        """Record a request and take its plan (an echo when none is queued)."""
        with self._lock:
            self.requests.append(seen)
            return self._plans.popleft() if self._plans else Reply()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that timed out or was reset is part of the script."""


def serve(tls: ssl.SSLContext | None = None) -> Iterator[LoopbackServer]:
    """Run a server on a thread for the duration of a fixture, stopped within seconds;
    behind TLS with ``tls`` (a server-side context holding its certificate)."""
    server = LoopbackServer()
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
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


def closed_port_url() -> str:
    """The URL of a loopback port nobody listens on (connections are refused)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


@dataclass
class SleepLog:
    """An injectable sleep that records the waits instead of taking them."""

    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def asleep(self, seconds: float) -> None:
        """The async form."""
        self.waits.append(seconds)


def wait_until(predicate: Any, *, timeout_s: float = 5.0) -> bool:
    """Poll ``predicate`` until true or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
