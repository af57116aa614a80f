"""Record what the real LiteLLM proxy relays when its upstream cuts a streamed reply.

Run from the repository root with the proxy installed (``make proxy``)::

    NISSE_LITELLM_BIN=.venv-proxy/bin/litellm python -m tests.stream.record_proxy_cuts [PREFIX]

For each client route (``/chat/completions``, ``/v1/messages``) and each kind of model
entry (``openai/``, ``anthropic/``), the scripted upstream streams a reply of long
text, long tool arguments or long thinking, either whole (the control) or with its
connection dropped part-way through that part. The request is the body nisse_llm's
client sends; the proxy's reply is stored byte for byte, with its status and
content type, in ``tests/fixtures/proxy_cuts/<case>.json``, which the replay tests
(tests/stream/test_proxy_cuts.py) feed to the accumulators.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from nisse_llm.events.canonical import ToolSpec, UserText
from nisse_llm.testing import ScriptedServer, Thinking, ToolUse, cut_after, ended_after, reply
from nisse_llm.testing.proxy import LITELLM_PIN, LiteLLMProxy, ProxyModel
from nisse_llm.testing.turns import Reply
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient

FIXTURES = Path(__file__).parent.parent / "fixtures" / "proxy_cuts"

WRITE_FILE = ToolSpec(
    name="write_file",
    description="Write a file in the workspace.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
BODY_TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(40))
LONG_TEXT = "Here is the plan. " + BODY_TEXT
LONG_ARGS = {"path": "notes/plan.txt", "content": BODY_TEXT}
LONG_THINKING = Thinking(
    "Think it through. " + BODY_TEXT,
    "EqQBCkYIBxgCKkDw0ZNnn9Js1nH1rq2Q3kFJ1Yd+0t1W2Qx0VnQ==",
)
SHORT_TEXT = "Done."
#: Where the upstream drops the connection: past the first events, well inside the long part
#: (the upstream writes events whole, so the cut falls on the event boundary before it).
CUT_AT = 6_000

PARTS: dict[str, tuple[Any, ...]] = {
    "text": (LONG_TEXT,),
    "tool": (ToolUse("write_file", LONG_ARGS),),
    "text_tool": ("Writing it now.", ToolUse("write_file", LONG_ARGS)),
    "thinking": (LONG_THINKING, SHORT_TEXT),
}


@dataclass(frozen=True)
class Case:
    """One recording: a client route, a model family, what is streamed, cut or whole."""

    route: str  # "chat" or "messages"
    family: str  # "gpt" (openai/ entry) or "claude" (anthropic/ entry)
    kind: str  # a key of PARTS
    #: "whole"; "ended": the body ends early, cleanly; "broken": it stops short of its length.
    cut: str

    @property
    def name(self) -> str:
        return f"{self.route}-{self.family}-{self.kind}-{self.cut}"

    def turn(self) -> Reply:
        whole = reply(*PARTS[self.kind])
        if self.cut == "ended":
            return ended_after(whole, CUT_AT)
        return cut_after(whole, CUT_AT) if self.cut == "broken" else whole


CASES = [
    Case(route, family, kind, cut)
    for route in ("chat", "messages")
    for family in ("gpt", "claude")
    for kind in PARTS
    for cut in ("ended", "broken", "whole")
]


def _request_body(case: Case, base_url: str, token: str) -> bytes:
    cls = LiteLLMClient if case.route == "chat" else AnthropicPassthroughClient
    with cls(base_url, token, max_tokens=4096) as client:
        events = [UserText(text="Write the plan to notes/plan.txt.")]
        tools = [WRITE_FILE] if "tool" in case.kind else None
        return client._core.begin(
            client.call_params(events, tools, f"{case.family}-rec"), stream=True
        ).body


def record(case: Case, proxy: LiteLLMProxy, server: ScriptedServer) -> dict[str, Any]:
    """Stream ``case`` through the proxy and return the fixture for it."""
    upstream = "openai_chat" if case.family == "gpt" else "anthropic_messages"
    server.script.reset()
    server.script.add(upstream, case.turn())
    body = _request_body(case, proxy.base_url, proxy.token)
    path = "/chat/completions" if case.route == "chat" else "/v1/messages"
    headers = {"authorization": f"Bearer {proxy.token}", "content-type": "application/json"}
    chunks: list[bytes] = []
    error = None
    with (
        httpx.Client(timeout=60, trust_env=False) as http,
        http.stream("POST", proxy.base_url + path, content=body, headers=headers) as response,
    ):
        try:
            for chunk in response.iter_raw():
                chunks.append(chunk)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        status, content_type = response.status_code, response.headers.get("content-type")
    if server.script.unscripted or server.script.pending():
        raise RuntimeError(f"{case.name}: the upstream was not called exactly once")
    return {
        "source": (
            f"Recorded with the real LiteLLM proxy ({LITELLM_PIN}) in front of nisse_llm's "
            "scripted upstream by tests/stream/record_proxy_cuts.py"
        ),
        "case": case.name,
        "client_route": case.route,
        "upstream": upstream,
        "upstream_cut": case.cut,
        "upstream_cut_after_bytes": None if case.cut == "whole" else CUT_AT,
        "parts": case.kind,
        "request": json.loads(body),
        "status": status,
        "content_type": content_type,
        "transport_error": error,
        "body": b"".join(chunks).decode("utf-8"),
    }


#: What the proxy's mock entry answers (LiteLLM's ``mock_response``), stream request or not.
MOCK_TEXT = "A mocked reply, whole."


def record_mock(route: str, proxy: LiteLLMProxy) -> dict[str, Any]:
    """A stream request to a ``mock_response`` entry: the proxy answers a whole JSON body."""
    body = _request_body(Case(route, "mock", "text", "whole"), proxy.base_url, proxy.token)
    path = "/chat/completions" if route == "chat" else "/v1/messages"
    headers = {"authorization": f"Bearer {proxy.token}", "content-type": "application/json"}
    with httpx.Client(timeout=60, trust_env=False) as http:
        response = http.post(proxy.base_url + path, content=body, headers=headers)
    return {
        "source": (
            f"Recorded with the real LiteLLM proxy ({LITELLM_PIN}), a model entry with "
            "mock_response, by tests/stream/record_proxy_cuts.py"
        ),
        "case": f"{route}-mock-whole",
        "client_route": route,
        "mock_response": MOCK_TEXT,
        "request": json.loads(body),
        "status": response.status_code,
        "content_type": response.headers.get("content-type"),
        "transport_error": None,
        "body": response.text,
    }


def _save(name: str, fixture: dict[str, Any]) -> None:
    path = FIXTURES / f"{name}.json"
    path.write_text(json.dumps(fixture, indent=1) + "\n", encoding="utf-8")
    print(f"{name}: {fixture['status']} {fixture['content_type']} {len(fixture['body'])} chars")


def main(only: str = "") -> None:
    """Record every case (whose name starts with ``only``) into tests/fixtures/proxy_cuts."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with ScriptedServer() as server:
        models = [
            ProxyModel("gpt-rec", "openai"),
            ProxyModel("claude-rec", "anthropic"),
            ProxyModel("mock-rec", "openai", extra_params={"mock_response": MOCK_TEXT}),
        ]
        with LiteLLMProxy(server.base_url, models=models, request_timeout_s=30) as proxy:
            for case in CASES:
                if case.name.startswith(only):
                    _save(case.name, record(case, proxy, server))
            for route in ("chat", "messages"):
                if f"{route}-mock".startswith(only) or only == "mock":
                    _save(f"{route}-mock-whole", record_mock(route, proxy))


if __name__ == "__main__":
    main(*sys.argv[1:2])
