"""The contenders: one way each to send a history to the stub and read the answer.

Every contender imports its library on `build`, so a missing peer is a `Skipped` with a
reason, never a crash. ``prepare`` runs outside the timer; ``call`` is what is timed.
A nisse_llm contender's ``prepare`` is one step of an agent loop: an untimed call on the
log without its last turn (the previous call), then the timed call gets that log plus
its last turn as new objects. Peers keep no state between calls and get the same input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import stub
from bench.workload import (
    MAX_TOKENS,
    MODEL_CHAT,
    MODEL_MESSAGES,
    SYSTEM,
    Workload,
    anthropic_tools,
    openai_tools,
)

TOKEN = "sk-bench"
CHAT_PATH = "/chat/completions"
MESSAGES_PATH = "/v1/messages"
RESPONSES_PATH = "/v1/responses"
_JSON_HEADERS = {"content-type": "application/json"}
_MESSAGES_HEADERS = {
    "content-type": "application/json",
    "x-api-key": TOKEN,
    "anthropic-version": "2023-06-01",
}


class Skipped(Exception):
    """A contender that cannot run here (its library is not installed, or not yet built)."""


@dataclass
class Contender:
    """One way to make the call: prepared outside the timer, called inside it."""

    key: str
    label: str
    route: str  # "chat", "messages" or "responses"
    group: str  # "floor", "nisse", "scale" or "peer"
    prepare: Callable[[Workload], Any]
    call: Callable[[Any], Any]
    check: Callable[[Any], None]
    close: Callable[[], None]
    # Leaves work on background threads (LiteLLM's logging): timing waits for it to end.
    background: bool = False


# key -> (label, route, group); the order is the report's row order.
CATALOGUE: dict[str, tuple[str, str, str]] = {
    "floor-chat": ("floor: httpx posting pre-serialised bytes", "chat", "floor"),
    "nisse-chat": ("nisse_llm LiteLLMClient.complete", "chat", "nisse"),
    "httpx-json-chat": ("httpx json= (stdlib json)", "chat", "scale"),
    "httpx-orjson-chat": ("httpx + orjson", "chat", "scale"),
    "openai-sdk": ("openai SDK chat.completions.create", "chat", "peer"),
    "litellm-chat": ("LiteLLM completion (openai/ model)", "chat", "peer"),
    "floor-messages": (
        "floor: httpx posting pre-serialised bytes",
        "messages",
        "floor",
    ),
    "nisse-messages": (
        "nisse_llm AnthropicPassthroughClient.complete",
        "messages",
        "nisse",
    ),
    "httpx-json-messages": ("httpx json= (stdlib json)", "messages", "scale"),
    "httpx-orjson-messages": ("httpx + orjson", "messages", "scale"),
    "floor-responses": ("floor: httpx posting pre-serialised bytes", "responses", "floor"),
    "nisse-responses": ("nisse_llm OpenAIResponsesClient.complete", "responses", "nisse"),
    "anthropic-sdk": ("anthropic SDK messages.create", "messages", "peer"),
    "litellm-messages": ("LiteLLM completion (anthropic/ model)", "messages", "peer"),
}


def _once_per_state(make: Callable[[Workload], Any]) -> Callable[[Workload], Any]:
    """Cache a prepared input per workload state: peers' inputs need no fresh objects."""
    cache: dict[tuple[int, int], Any] = {}

    def prepare(wl: Workload) -> Any:
        key = (id(wl), len(wl.turns))
        if key not in cache:
            cache.clear()
            cache[key] = make(wl)
        return cache[key]

    return prepare


def _check_chat_json(data: Any) -> None:
    message = data["choices"][0]["message"]
    call = message["tool_calls"][0]["function"]
    if message["content"] != stub.TEXT or call["name"] != stub.TOOL:
        raise AssertionError(f"unexpected chat answer: {message!r}")
    if json.loads(call["arguments"]) != stub.ARGUMENTS:
        raise AssertionError(f"unexpected tool arguments: {call['arguments']!r}")


def _check_messages_json(data: Any) -> None:
    text, use = data["content"]
    if text["text"] != stub.TEXT or use["name"] != stub.TOOL or use["input"] != stub.ARGUMENTS:
        raise AssertionError(f"unexpected messages answer: {data['content']!r}")


def _check_responses_json(data: Any) -> None:
    message, call = data["output"]
    if message["content"][0]["text"] != stub.TEXT or call["name"] != stub.TOOL:
        raise AssertionError(f"unexpected responses answer: {data['output']!r}")
    if json.loads(call["arguments"]) != stub.ARGUMENTS:
        raise AssertionError(f"unexpected tool arguments: {call['arguments']!r}")


def _check_events(events: Any) -> None:
    from nisse_llm.events.canonical import AssistantText, ToolCall

    kinds = [type(e) for e in events]
    if kinds != [AssistantText, ToolCall]:
        raise AssertionError(f"unexpected events: {events!r}")
    text, call = events
    if text.text != stub.TEXT or call.tool != stub.TOOL or call.arguments != stub.ARGUMENTS:
        raise AssertionError(f"unexpected events: {events!r}")


def _import(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Skipped(f"`{module}` not importable ({exc})") from exc


def _httpx_client(base_url: str, headers: dict[str, str]) -> Any:
    import httpx

    return httpx.Client(
        base_url=base_url,
        headers={"authorization": f"Bearer {TOKEN}", **headers},
        timeout=120.0,
        trust_env=False,
    )


#: Each route's path, body (dict and pre-serialised bytes), reply check and headers.
_ROUTES: dict[str, tuple[str, Callable[[Workload], Any], Callable[[Workload], bytes], Any, Any]] = {
    "chat": (CHAT_PATH, Workload.chat_body, Workload.chat_bytes, _check_chat_json, _JSON_HEADERS),
    "messages": (
        MESSAGES_PATH,
        Workload.messages_body,
        Workload.messages_bytes,
        _check_messages_json,
        _MESSAGES_HEADERS,
    ),
    "responses": (
        RESPONSES_PATH,
        Workload.responses_body,
        Workload.responses_bytes,
        _check_responses_json,
        _JSON_HEADERS,
    ),
}


def build(key: str, base_url: str) -> Contender:
    """The contender ``key`` talking to the stub at ``base_url``; `Skipped` if it can't run."""
    label, route, group = CATALOGUE[key]
    chat = route == "chat"
    path, body_of, bytes_of, check_json, headers = _ROUTES[route]

    def make(
        prepare: Callable[[Workload], Any],
        call: Callable[[Any], Any],
        check: Callable[[Any], None],
        close: Callable[[], None],
        *,
        background: bool = False,
    ) -> Contender:
        return Contender(key, label, route, group, prepare, call, check, close, background)

    if group == "floor":
        http = _httpx_client(base_url, headers)
        return make(
            _once_per_state(bytes_of),
            lambda data: http.post(path, content=data).content,
            lambda content: check_json(json.loads(content)),
            http.close,
        )
    if key.startswith("httpx-json"):
        http = _httpx_client(base_url, headers)
        return make(
            _once_per_state(body_of),
            lambda body: http.post(path, json=body).json(),
            check_json,
            http.close,
        )
    if key.startswith("httpx-orjson"):
        orjson = _import("orjson")
        http = _httpx_client(base_url, headers)
        return make(
            _once_per_state(body_of),
            lambda body: orjson.loads(http.post(path, content=orjson.dumps(body)).content),
            check_json,
            http.close,
        )
    if group == "nisse":
        clients = _import("nisse_llm.transport.clients")
        if route == "responses":
            cls = _import("nisse_llm.transport.responses_client").OpenAIResponsesClient
        else:
            cls = clients.LiteLLMClient if chat else clients.AnthropicPassthroughClient
        client = cls(base_url, TOKEN, max_tokens=MAX_TOKENS)
        specs = Workload.tool_specs()
        model = MODEL_MESSAGES if route == "messages" else MODEL_CHAT

        def agent_step(wl: Workload) -> Any:
            records = wl.records_fresh_tail()
            previous = records[: -wl.tail_length()]
            if previous:
                client.complete(previous, specs, model, system=SYSTEM)
            return records

        return make(
            agent_step,
            lambda records: client.complete(records, specs, model, system=SYSTEM),
            _check_events,
            client.close,
        )
    if key == "openai-sdk":
        openai = _import("openai")
        oai = openai.OpenAI(base_url=base_url, api_key=TOKEN, max_retries=0)
        tools = openai_tools()
        return make(
            _once_per_state(Workload.openai_messages),
            lambda messages: oai.chat.completions.create(
                model=MODEL_CHAT, messages=messages, tools=tools, max_tokens=MAX_TOKENS
            ),
            lambda r: _check_chat_json(r.model_dump()),
            oai.close,
        )
    if key == "anthropic-sdk":
        anthropic = _import("anthropic")
        ant = anthropic.Anthropic(base_url=base_url, api_key=TOKEN, max_retries=0)
        tools = anthropic_tools()
        return make(
            _once_per_state(Workload.anthropic_messages),
            lambda messages: ant.messages.create(
                model=MODEL_MESSAGES,
                max_tokens=MAX_TOKENS,
                system=SYSTEM,
                messages=messages,
                tools=tools,
            ),
            lambda r: _check_messages_json(r.model_dump()),
            ant.close,
        )
    if key.startswith("litellm"):
        litellm = _import("litellm")
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        model = f"openai/{MODEL_CHAT}" if chat else f"anthropic/{MODEL_MESSAGES}"
        tools = openai_tools()
        return make(
            _once_per_state(Workload.openai_messages),
            lambda messages: litellm.completion(
                model=model,
                messages=messages,
                tools=tools,
                max_tokens=MAX_TOKENS,
                api_base=base_url,
                api_key=TOKEN,
                num_retries=0,
            ),
            lambda r: _check_chat_json(r.model_dump()),
            lambda: None,
            background=True,
        )
    raise KeyError(key)


def expected_request(key: str, wl: Workload) -> dict[str, Any]:
    """What the stub should have received from ``key``'s call on ``wl``."""
    _, route, _ = CATALOGUE[key]
    if route == "chat":
        return {"path": CHAT_PATH, "messages": len(wl.openai_messages()), "tools": 10}
    if route == "responses":
        return {"path": RESPONSES_PATH, "messages": len(wl.responses_body()["input"]), "tools": 10}
    return {
        "path": MESSAGES_PATH,
        "messages": len(wl.anthropic_messages()),
        "tools": 10,
    }
