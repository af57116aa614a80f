"""Shared pieces of the proxy integration suite: clients, combinations, upstream readers."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from nisse_llm.config.routing import Route
from nisse_llm.testing import Script, ScriptedServer
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient

#: The proxy's ``request_timeout``: a slower upstream gets 408 after this many seconds.
REQUEST_TIMEOUT_S = 3.0
#: The output ceiling the suite's clients send.
MAX_TOKENS = 1024
#: The proxy config the docs give for development against real providers.
DEV_CONFIG = Path(__file__).resolve().parents[2] / "config" / "litellm.dev.yaml"

ClientRoute = Literal["chat", "messages"]
Family = Literal["gpt", "claude"]


@dataclass(frozen=True)
class Combo:
    """One client route against one kind of model entry."""

    route: ClientRoute
    family: Family

    @property
    def id(self) -> str:
        return f"{self.route}-route->{'openai' if self.family == 'gpt' else 'anthropic'}-model"

    def model(self, kind: str = "scripted") -> str:
        """The proxy model name of this family's ``kind`` entry."""
        return f"{self.family}-{kind}"

    @property
    def upstream(self) -> Route:
        """The route the upstream is reached on (set by the model's provider)."""
        return "openai_chat" if self.family == "gpt" else "anthropic_messages"


COMBOS = [Combo(r, f) for r in ("chat", "messages") for f in ("gpt", "claude")]
COMBO_IDS = [c.id for c in COMBOS]


class RecordingTransport(httpx.BaseTransport):
    """Forwards to the network and keeps every request body exactly as the client sent it."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.bodies: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.read())
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


@dataclass
class Harness:
    """A client on one route through the proxy, with its sent bodies and recorded sleeps."""

    client: LiteLLMClient | AnthropicPassthroughClient
    sent: RecordingTransport
    sleeps: list[float] = field(default_factory=list)


@contextmanager
def client_for(
    proxy: LiteLLMProxy, route: ClientRoute, *, token: str | None = None, **options: Any
) -> Iterator[Harness]:
    """A client on ``route`` through ``proxy``; its sleep records and returns at once."""
    sent = RecordingTransport()
    sleeps: list[float] = []
    cls = LiteLLMClient if route == "chat" else AnthropicPassthroughClient
    record: Callable[[float], None] = sleeps.append
    client = cls(
        proxy.base_url,
        token if token is not None else proxy.token,
        transport=sent,
        sleep=record,
        max_tokens=MAX_TOKENS,
        **options,
    )
    with client:
        yield Harness(client=client, sent=sent, sleeps=sleeps)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(item.get("text", item.get("content", ""))) for item in content)
    return ""


def tool_calls_sent(body: dict[str, Any], upstream: Route) -> list[tuple[str, str, dict[str, Any]]]:
    """(id, name, arguments) of every assistant tool call in an upstream request body."""
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for message in body["messages"]:
        if message["role"] != "assistant":
            continue
        if upstream == "openai_chat":
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                calls.append((call["id"], fn["name"], json.loads(fn["arguments"])))
        elif isinstance(message["content"], list):
            for block in message["content"]:
                if block["type"] == "tool_use":
                    calls.append((block["id"], block["name"], block["input"]))
    return calls


def tool_results_sent(body: dict[str, Any], upstream: Route) -> dict[str, tuple[str, bool | None]]:
    """call id -> (output text, is_error flag or None where the route has none)."""
    results: dict[str, tuple[str, bool | None]] = {}
    for message in body["messages"]:
        if upstream == "openai_chat" and message["role"] == "tool":
            results[message["tool_call_id"]] = (_text_of(message["content"]), None)
        elif upstream == "anthropic_messages" and isinstance(message["content"], list):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    flag = block.get("is_error")
                    results[block["tool_use_id"]] = (_text_of(block.get("content", "")), flag)
    return results


@contextmanager
def fresh_script(upstream: ScriptedServer) -> Iterator[Script]:
    """The upstream's script, empty at the start; a test fails if any request reached the
    upstream with no turn scripted for it."""
    upstream.script.reset()
    yield upstream.script
    unscripted = upstream.script.unscripted
    upstream.script.reset()
    if unscripted:
        pytest.fail(f"requests reached the upstream with no turn scripted: {unscripted}")


@contextmanager
def proxy_of(
    upstream: ScriptedServer, litellm_bin: Path, models: Sequence[ProxyModel]
) -> Iterator[LiteLLMProxy]:
    """A proxy of its own with ``models``, in front of the session's scripted upstream, with
    the suite's request timeout."""
    with LiteLLMProxy(
        upstream.base_url,
        models=models,
        executable=litellm_bin,
        request_timeout_s=REQUEST_TIMEOUT_S,
    ) as running:
        yield running


def dev_proxy_config(litellm_bin: Path) -> dict[str, Any]:
    """config/litellm.dev.yaml as the proxy's own YAML loader reads it."""
    loaded = subprocess.run(
        [
            str(litellm_bin.parent / "python"),
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            str(DEV_CONFIG),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    config: dict[str, Any] = json.loads(loaded.stdout)
    return config


def dev_proxy_models(config: dict[str, Any]) -> list[ProxyModel]:
    """The dev config's model entries, reaching the scripted upstream instead of a provider
    (with a dummy key); every other parameter of each entry kept."""
    models: list[ProxyModel] = []
    for entry in config["model_list"]:
        params = dict(entry["litellm_params"])
        provider, upstream_model = params.pop("model").split("/", 1)
        params.pop("api_key", None)
        models.append(
            ProxyModel(
                entry["model_name"], provider, upstream_model=upstream_model, extra_params=params
            )
        )
    return models
