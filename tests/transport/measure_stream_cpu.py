"""Client CPU per streamed reply of 1,000 text deltas: nisse_llm's stream() against raw httpx.

Run: ``python -m tests.transport.measure_stream_cpu``. The upstream runs in its own process
(its CPU is not counted) and answers every POST with the same prepared SSE bytes, in
4 KiB chunked writes. Contenders, per route: httpx reading the bytes and nothing else
(the floor); httpx ``iter_lines`` plus ``json.loads`` of each data line (a hand-rolled
minimal client); httpx feeding the route's stream accumulator (the sans-I/O core alone);
nisse_llm ``stream()`` iterated to its end (deltas, final events, usage);
and nisse_llm ``complete()`` on the same reply unstreamed, for reference.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx

from nisse_llm.config.routing import Route
from nisse_llm.events.canonical import UserText
from nisse_llm.testing.sse import split_bytes, sse_stream
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
from tests.transport.loopback import echo_completion

DELTAS = 1000
CHUNK = 8
ROUNDS, CALLS, WARMUP = 5, 60, 20
PATHS: dict[Route, str] = {"openai_chat": "/chat/completions", "anthropic_messages": "/v1/messages"}


def _body(route: Route) -> dict[str, Any]:
    whole: dict[str, Any] = json.loads(echo_completion(PATHS[route], {"model": "m"}))
    text = "".join(f"w{i % 10}rd-{i:03d}"[:CHUNK] for i in range(DELTAS))
    if route == "openai_chat":
        whole["choices"][0]["message"]["content"] = text
    else:
        whole["content"][0]["text"] = text
    return whole


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    answers: ClassVar[dict[str, tuple[bytes, bytes]]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        request = self.rfile.read(int(self.headers.get("content-length") or 0))
        stream, whole = self.answers[self.path]
        if b'"stream":true' not in request:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(whole)))
            self.end_headers()
            self.wfile.write(whole)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for piece in split_bytes(stream, 4096):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")


def _serve(port: Any) -> None:
    for route, path in PATHS.items():
        body = _body(route)
        _Handler.answers[path] = (
            sse_stream(route, body, chunk_size=CHUNK),
            json.dumps(body).encode(),
        )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port.value = server.server_address[1]
    server.serve_forever()


def _cpu_per_call(run: Callable[[], object]) -> float:
    for _ in range(WARMUP):
        run()
    samples = []
    for _ in range(ROUNDS):
        start = time.process_time()
        for _ in range(CALLS):
            run()
        samples.append((time.process_time() - start) / CALLS)
    return statistics.median(samples)


def _route_rows(base: str, route: Route) -> tuple[int, list[tuple[str, float]]]:
    path = PATHS[route]
    events = [UserText(text="Write at length.")]
    cls = LiteLLMClient if route == "openai_chat" else AnthropicPassthroughClient
    counted = [0]
    with cls(base, "sk-bench") as client:
        sent = client._core.begin(client.call_params(events, None, "m"), stream=True).body
        http = httpx.Client(headers=client._core.headers)

        def raw_bytes() -> None:
            with http.stream("POST", base + path, content=sent) as response:
                for _ in response.iter_bytes():
                    pass

        def raw_json() -> None:
            with http.stream("POST", base + path, content=sent) as response:
                for line in response.iter_lines():
                    if line.startswith("data: {"):
                        json.loads(line[6:])

        def raw_accumulator() -> None:
            acc = client._core.begin(client.call_params(events, None, "m")).accumulator()
            with http.stream("POST", base + path, content=sent) as response:
                for chunk in response.iter_bytes():
                    acc.feed(chunk)
            acc.finish()

        def nisse_stream() -> None:
            with client.stream(events, None, "m") as stream:
                counted[0] = sum(1 for _ in stream)
            assert stream.events

        def nisse_complete() -> None:
            client.complete(events, None, "m")

        with http:
            rows = [
                ("httpx iter_bytes (floor)", _cpu_per_call(raw_bytes)),
                ("httpx iter_lines + json.loads", _cpu_per_call(raw_json)),
                ("httpx iter_bytes + accumulator", _cpu_per_call(raw_accumulator)),
                ("nisse_llm stream()", _cpu_per_call(nisse_stream)),
                ("nisse_llm complete() (unstreamed)", _cpu_per_call(nisse_complete)),
            ]
    return counted[0], rows


def main() -> None:
    """Print one row per route and contender: microseconds of client CPU per reply."""
    port = multiprocessing.Value("i", 0)
    server = multiprocessing.Process(target=_serve, args=(port,), daemon=True)
    server.start()
    while not port.value:
        time.sleep(0.01)
    try:
        for route in PATHS:
            deltas, rows = _route_rows(f"http://127.0.0.1:{port.value}", route)
            floor = rows[0][1]
            print(f"{route}: {deltas} deltas per reply")
            for name, cpu in rows:
                print(f"  {name:36} {cpu * 1e6:9.0f} us  {cpu / floor:5.2f}x floor")
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
