"""`LiteLLMProxy(port=P)` and whatever else holds P: a port in use is refused before
anything starts, and a server that takes it meanwhile is never taken for the proxy."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nisse_llm.testing import ScriptedServer
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel, ProxyStartError, free_port, main

pytestmark = pytest.mark.proxy

MODELS = [ProxyModel("gpt-scripted", "openai")]
TOKEN = "sk-same-token-" + "9c1e" * 4


@pytest.fixture
def listener() -> Iterator[int]:
    """A port something listens on (and never answers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_port_in_use_is_refused_before_anything_starts(
    litellm_bin: Path, upstream: ScriptedServer, listener: int
) -> None:
    """start() raises at once, naming the port, and launches no process."""
    proxy = LiteLLMProxy(upstream.base_url, models=MODELS, executable=litellm_bin, port=listener)
    with pytest.raises(ProxyStartError) as caught:
        proxy.start()
    assert f"port {listener} on 127.0.0.1 is taken by another process" in str(caught.value)
    assert "leave port unset" in str(caught.value)
    assert proxy.pid is None


def test_the_port_of_a_running_proxy_is_refused(
    litellm_bin: Path, proxy: LiteLLMProxy, upstream: ScriptedServer
) -> None:
    """A second proxy asked for a running one's port, with its token, is refused, and the
    first keeps serving."""
    port = int(proxy.base_url.rsplit(":", 1)[1])
    second = LiteLLMProxy(upstream.base_url, executable=litellm_bin, port=port, token=proxy.token)
    with pytest.raises(ProxyStartError, match=f"port {port} on 127.0.0.1 is taken"):
        second.start()
    assert second.pid is None
    assert proxy.pid is not None


def test_the_command_refuses_a_port_in_use(
    listener: int,
    litellm_bin: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`python -m nisse_llm.testing.proxy --port P` with P taken: an error line, exit 1."""
    monkeypatch.setenv("NISSE_LITELLM_BIN", str(litellm_bin))
    assert main(["--port", str(listener)]) == 1
    assert f"error: port {listener} on 127.0.0.1 is taken" in capsys.readouterr().err


class _StaleProxy(BaseHTTPRequestHandler):
    """Answers as a stale proxy with the same token and models would: alive to anyone,
    the model list to its token, 401 to any other key."""

    asked: list[tuple[str, int]]

    def do_GET(self) -> None:
        if self.path == "/health/liveliness":
            self._answer(200, b'"I\'m alive!"')
        elif self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._answer(401, b'{"error": {"message": "Authentication Error"}}')
        else:
            listed = {"data": [{"id": m.name, "object": "model"} for m in MODELS]}
            self._answer(200, json.dumps(listed).encode())

    def _answer(self, status: int, body: bytes) -> None:
        self.asked.append((self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _AnyServer(_StaleProxy):
    """Answers 200 to everything, as many a development server does."""

    def do_GET(self) -> None:
        self._answer(200, b"OK")


@pytest.mark.parametrize("stand_in", [_StaleProxy, _AnyServer], ids=["stale-proxy", "any-server"])
def test_a_server_taking_the_port_after_the_check_is_not_mistaken_for_the_proxy(
    stand_in: type[_StaleProxy], litellm_bin: Path, upstream: ScriptedServer
) -> None:
    """A server binds the port once the proxy process is launched (LiteLLM binds seconds
    later): start() never reports it healthy, though it answers liveliness (and, as a stale
    proxy, knows the token); the launched process fails to bind and start() raises."""
    port = free_port()
    proxy = LiteLLMProxy(
        upstream.base_url, models=MODELS, executable=litellm_bin, port=port, token=TOKEN
    )
    asked: list[tuple[str, int]] = []
    handler = type("Handler", (stand_in,), {"asked": asked})
    servers: list[ThreadingHTTPServer] = []

    def take_the_port() -> None:
        while proxy.pid is None:
            time.sleep(0.005)
        servers.append(ThreadingHTTPServer(("127.0.0.1", port), handler))
        servers[0].serve_forever(poll_interval=0.05)

    thief = threading.Thread(target=take_the_port, daemon=True)
    thief.start()
    try:
        with pytest.raises(ProxyStartError) as caught:
            proxy.start()
    finally:
        while thief.is_alive() and not servers:
            time.sleep(0.01)
        if servers:
            servers[0].shutdown()
            servers[0].server_close()
        thief.join(timeout=5)
    assert f"port {port} on 127.0.0.1 is taken by another process" in str(caught.value)
    status = 401 if stand_in is _StaleProxy else 200
    assert ("/v1/models", status) in asked  # asked, and the answer not taken for ready
    assert proxy.pid is None
