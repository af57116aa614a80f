"""The scripting core: turns an upstream will answer, per route, and a record of every request.

No I/O: `Script.respond` maps one request (method, path, headers, body bytes) to a
`ScriptedAnswer`; the transports (`ScriptedTransport`, `ScriptedServer`) carry it. A
script is shared by threads (the loopback server answers on several), so it locks.

Turns queued with `Script.when` answer only the requests they match (by model, last user
text, last tool result, or any predicate), before the route's plain queue: several
agents running at once each get their own replies, whatever order their requests arrive in.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from nisse_llm.routes import ROUTE_TABLE, load
from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.routes.openai_responses import OPENAI_RESPONSES
from nisse_llm.testing.bodies import (
    estimate_tokens,
)
from nisse_llm.testing.sse import sse_stream
from nisse_llm.testing.turns import (
    Disconnect,
    Failure,
    Reply,
    Turn,
)

if TYPE_CHECKING:
    from nisse_llm.testing.route_kits import RouteKit

__all__ = [
    "RecordedRequest",
    "RequestPredicate",
    "Script",
    "ScriptedAnswer",
    "route_of_path",
]

_JSON = (("content-type", "application/json"),)
_SSE = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
_EMPTY_MODEL_LIST = b'{"object": "list", "data": []}'


def route_of_path(path: str) -> str | None:
    """The upstream route a request path speaks (by the route table), or ``None`` for any
    other path.

    Matched on the path's end, so a base URL with a prefix (``/v1``, ``/api``) works.
    """
    route = ROUTE_TABLE.for_path(path)
    return None if route is None else route.name


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the scripted upstream received it."""

    method: str
    path: str
    #: Header names lower-cased; a repeated header keeps its last value.
    headers: Mapping[str, str]
    body: bytes
    route: str | None
    #: When it arrived (``time.time()``, seconds since the epoch): for per-window counts.
    received_at: float = 0.0

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or ``None`` when it is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def model(self) -> str | None:
        """The model the body names, or ``None``."""
        sent = self.json
        model = sent.get("model") if isinstance(sent, dict) else None
        return model if isinstance(model, str) else None

    @property
    def user_texts(self) -> list[str]:
        """The text of each user message in the body, in order (tool results excluded)."""
        return [text for kind, text in _message_texts(self.json) if kind == "user"]

    @property
    def last_user_text(self) -> str | None:
        """The last user text in the body (a message carrying only tool results has none)."""
        texts = self.user_texts
        return texts[-1] if texts else None

    @property
    def tool_results(self) -> list[str]:
        """The output of each tool result in the body, in order."""
        return [text for kind, text in _message_texts(self.json) if kind == "tool"]

    @property
    def last_tool_result(self) -> str | None:
        """The output of the last tool result in the body, or ``None``."""
        results = self.tool_results
        return results[-1] if results else None


#: A test of a request: ``True`` when a `Script.when` rule's turns should answer it.
RequestPredicate = Callable[[RecordedRequest], bool]


def _joined(content: Any) -> str:
    """The text of a message content: a string, or the text of its text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _input_text(content: Any) -> str:
    """The text of a Responses content: a string, or its ``input_text`` parts."""
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "input_text"
        )
    return content if isinstance(content, str) else ""


def _input_texts(items: list[Any]) -> list[tuple[str, str]]:
    """``("user", text)`` and ``("tool", output)`` pairs of a Responses ``input``."""
    found: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            found.append(("tool", _input_text(item.get("output"))))
        elif item.get("role") == "user" and item.get("type", "message") == "message":
            found.append(("user", _input_text(item.get("content"))))
    return found


def _message_texts(body: Any) -> list[tuple[str, str]]:
    """``("user", text)`` and ``("tool", output)`` pairs of a chat, messages or Responses
    body, in order."""
    found: list[tuple[str, str]] = []
    items = body.get("input") if isinstance(body, dict) else None
    if isinstance(items, list):
        return _input_texts(items)
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "tool":
            found.append(("tool", _joined(content)))
        elif role == "user" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    found.append(("tool", _joined(block.get("content"))))
                elif block.get("type") == "text":
                    found.append(("user", str(block.get("text", ""))))
        elif role == "user":
            found.append(("user", _joined(content)))
    return found


@dataclass
class _Rule:
    """Turns that answer only requests passing ``test``, in order."""

    test: RequestPredicate
    route: str | None
    turns: deque[Turn]


@dataclass(frozen=True)
class ScriptedAnswer:
    """What a transport sends back: status, headers, body, after ``delay_s`` seconds."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    delay_s: float = 0.0
    #: Close the connection without answering (status, headers and body unused).
    disconnect: bool = False
    #: Send only this many bytes of the body, then stall (``stall_s``) or drop the connection.
    break_at: int | None = None
    stall_s: float | None = None
    #: At ``break_at``, end the body cleanly (no content-length; close the connection).
    clean_cut: bool = False


def _check_route(route: object) -> None:
    if route not in ROUTE_TABLE:
        raise ValueError(f"unknown route {route!r}; expected one of {ROUTE_TABLE.names()}")


def _check_turns(turns: tuple[object, ...]) -> None:
    for turn in turns:
        if not isinstance(turn, Reply | Failure | Disconnect):
            raise TypeError(f"not a turn: {turn!r}")


@dataclass
class _State:
    queues: defaultdict[str, deque[Turn]] = field(default_factory=lambda: defaultdict(deque))
    rules: list[_Rule] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    unscripted: list[RecordedRequest] = field(default_factory=list)
    listings: list[RecordedRequest] = field(default_factory=list)
    answered: int = 0


class Script:
    """Turns to answer with, one queue per upstream route, and every request received.

    Each request takes the next turn of the first `when` rule it matches that has turns
    left, else the next turn of its route's queue. A request finding neither gets a 500
    naming the route, and is listed in `unscripted`, so a test that under-scripts fails
    loudly rather than hanging.

    A ``fallback`` answers instead when both are empty: it maps the request to a turn
    (a load run's upstream answers any number of calls this way). It is kept by `reset`;
    requests it answers are not `unscripted`.
    """

    def __init__(self, fallback: Callable[[RecordedRequest], Turn] | None = None) -> None:
        self._lock = threading.Lock()
        self._state = _State()
        self._fallback = fallback

    def add(self, route: str, *turns: Turn) -> Script:
        """Append turns to a route's queue; returns the script for chaining."""
        _check_route(route)
        _check_turns(turns)
        with self._lock:
            self._state.queues[route].extend(turns)
        return self

    def when(
        self,
        *turns: Turn,
        model: str | None = None,
        user_text: str | None = None,
        tool_result: str | None = None,
        route: str | None = None,
        where: RequestPredicate | None = None,
    ) -> Script:
        """Queue turns that answer only matching requests, in order; returns the script.

        Every criterion given must hold: ``model`` equals the body's model; ``user_text``
        is found in the request's `last_user_text`; ``tool_result`` in its
        `last_tool_result`; ``route`` is the request's route; ``where(request)`` is true.
        Rules are tried in the order they were added. Several concurrent agents, each
        opening with its own task text, get their own replies with
        ``script.when(reply(...), reply(...), user_text="task of agent 1")``.
        """
        if route is not None:
            _check_route(route)
        _check_turns(turns)

        def test(request: RecordedRequest) -> bool:
            last_user, last_tool = request.last_user_text, request.last_tool_result
            return (
                (model is None or request.model == model)
                and (user_text is None or (last_user is not None and user_text in last_user))
                and (tool_result is None or (last_tool is not None and tool_result in last_tool))
                and (route is None or request.route == route)
                and (where is None or where(request))
            )

        with self._lock:
            self._state.rules.append(_Rule(test=test, route=route, turns=deque(turns)))
        return self

    def chat(self, *turns: Turn) -> Script:
        """Append turns answered on ``/chat/completions`` (the OpenAI-compatible upstream)."""
        return self.add(OPENAI_CHAT.name, *turns)

    def messages(self, *turns: Turn) -> Script:
        """Append turns answered on ``/v1/messages`` (the Anthropic upstream)."""
        return self.add(ANTHROPIC_MESSAGES.name, *turns)

    def responses(self, *turns: Turn) -> Script:
        """Append turns answered on ``/responses`` and ``/v1/responses`` (OpenAI's
        Responses API: the route of `OpenAIResponsesClient`, and where the proxy bridges
        a chat request that has tools and a reasoning effort for current OpenAI models)."""
        return self.add(OPENAI_RESPONSES.name, *turns)

    def reset(self) -> None:
        """Forget every queued turn and every recorded request."""
        with self._lock:
            self._state = _State()

    def pending(self, route: str | None = None) -> int:
        """How many turns are still queued (on one route, or on all)."""
        with self._lock:
            queues = self._state.queues
            plain = sum(len(queues[r]) for r in ([route] if route else list(queues)))
            matched = sum(
                len(rule.turns)
                for rule in self._state.rules
                if route is None or rule.route in (None, route)
            )
            return plain + matched

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received since the last reset, oldest first (a copy)."""
        with self._lock:
            return list(self._state.requests)

    @property
    def unscripted(self) -> list[RecordedRequest]:
        """Requests that found no turn queued (or hit an unknown path)."""
        with self._lock:
            return list(self._state.unscripted)

    @property
    def listings(self) -> list[RecordedRequest]:
        """``GET .../models`` requests: answered with an empty list, kept out of `requests`.

        LiteLLM discovers an OpenAI-compatible upstream's models in the background,
        at a moment no test controls.
        """
        with self._lock:
            return list(self._state.listings)

    def requests_to(self, route: str) -> list[RecordedRequest]:
        """The requests received on one route, oldest first."""
        return [r for r in self.requests if r.route == route]

    def respond(
        self,
        method: str,
        path: str,
        headers: Iterable[tuple[str, str]] | Mapping[str, str],
        body: bytes,
        *,
        turn: Turn | None = None,
    ) -> ScriptedAnswer:
        """Record one request and answer it with the next turn of its route (or with
        ``turn``, when given: a caller that keeps its own queues, such as
        `ScriptedRouter`)."""
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        route = route_of_path(path) if method.upper() == "POST" else None
        request = RecordedRequest(
            method=method.upper(),
            path=path,
            headers={name.lower(): value for name, value in pairs},
            body=body,
            route=route,
            received_at=time.time(),
        )
        if request.method == "GET" and request.path.split("?", 1)[0].rstrip("/").endswith(
            "/models"
        ):
            with self._lock:
                self._state.listings.append(request)
            return ScriptedAnswer(status=200, headers=_JSON, body=_EMPTY_MODEL_LIST)
        with self._lock:
            state = self._state
            state.requests.append(request)
            if turn is None and route:
                turn = _matched_turn(state.rules, request)
            queue = state.queues[route] if route else None
            if turn is None:
                turn = queue.popleft() if queue else None
            if turn is None and route is not None and self._fallback is not None:
                turn = self._fallback(request)
            if turn is None:
                state.unscripted.append(request)
            state.answered += 1
            serial = state.answered
        if route is None:
            return _error(
                404, ROUTE_TABLE.default.name, f"scripted upstream: no route for {method} {path}"
            )
        if turn is None:
            return _error(500, route, f"scripted upstream: no turn left for {route}")
        return _answer(turn, route, request, serial)


def _matched_turn(rules: list[_Rule], request: RecordedRequest) -> Turn | None:
    """The next turn of the first rule with turns left that ``request`` passes."""
    for rule in rules:
        if rule.turns and rule.test(request):
            return rule.turns.popleft()
    return None


def _error(status: int, route: str, message: str) -> ScriptedAnswer:
    body = _kit(route).error_body(message)
    return ScriptedAnswer(status=status, headers=_JSON, body=json.dumps(body).encode())


def _kit(route: str) -> RouteKit:
    kit: RouteKit = load(ROUTE_TABLE[route].kit)
    return kit


def _answer(turn: Turn, route: str, request: RecordedRequest, serial: int) -> ScriptedAnswer:
    if isinstance(turn, Disconnect):
        return ScriptedAnswer(status=0, headers=(), body=b"", delay_s=turn.delay_s, disconnect=True)
    if isinstance(turn, Failure):
        return ScriptedAnswer(
            status=turn.status, headers=turn.headers, body=turn.body, delay_s=turn.delay_s
        )
    if isinstance(turn, Reply):
        return _map_reply(turn, route, request, serial)
    assert_never(turn)


def _map_reply(turn: Reply, route: str, request: RecordedRequest, serial: int) -> ScriptedAnswer:
    sent = request.json
    model = turn.model or (sent.get("model") if isinstance(sent, dict) else None) or "scripted"
    usage = turn.usage or estimate_tokens(request.body, turn.parts)
    body = _kit(route).reply_body(
        turn.parts, model=str(model), usage=usage, truncated=turn.truncated, serial=serial
    )
    streamed = isinstance(sent, dict) and sent.get("stream") is True
    data = sse_stream(route, body) if streamed else json.dumps(body).encode()
    break_at = turn.break_at
    if streamed and break_at is not None:
        # Servers write events whole: a stream breaks between two of them.
        break_at = data.rfind(b"\n\n", 0, break_at) + 2
    return ScriptedAnswer(
        status=200,
        headers=(_SSE if streamed else _JSON) + turn.headers,
        body=data,
        delay_s=turn.delay_s,
        break_at=break_at,
        stall_s=turn.stall_s,
        clean_cut=turn.clean_cut,
    )
