"""First use stays cheap: what a plain call never needs is never loaded, built or read.

``make bench`` measures first use (import, an event, a client, one request) against
``import httpx, pydantic`` plus one httpx request; these tests hold the reasons it is
cheap, each of which an innocent-looking eager import would undo: the other route's
models, the request models (a request from a log alone is spelled out in bytes),
streaming, the failure readers, the model-info readers, and the CA bundle of a
plain-http client.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from nisse_llm import CallInfo, RequestOptions
from nisse_llm.wire.openai_chat import OpenAIChatRequest
from tests.transport.loopback import LoopbackServer, serve

#: Modules a first chat call through `LiteLLMClient` must leave unloaded.
NOT_NEEDED = (
    "asyncio",
    "nisse_llm.wire.anthropic_messages",
    "nisse_llm.wire.anthropic_messages_reply",
    "nisse_llm.wire.openai_chat",
    "nisse_llm.wire.errors",
    "nisse_llm.stream.deltas",
    "nisse_llm.stream._sse",
    "nisse_llm.wire._overflow",
    "nisse_llm._partial",
    "nisse_llm.wire.models_info",
    "nisse_llm.config.options",
    "nisse_llm.config.settings",
    "nisse_llm.task.compaction",
    "nisse_llm.task.summaries",
    # The Responses route loads with its first use: a program that never takes it loads none.
    "nisse_llm.transport.responses_client",
    "nisse_llm.render.openai_responses",
    "nisse_llm.render.openai_responses_reply",
    "nisse_llm.wire.openai_responses",
    "nisse_llm.wire.openai_responses_reply",
    "nisse_llm.stream.responses",
    # Telemetry loads with instrument(): an agent that never asks imports no OpenTelemetry.
    "nisse_llm.telemetry",
    "opentelemetry",
)

_PROGRAM = """
import json, sys
from pydantic._internal import _model_construction
built = []
_complete = _model_construction.complete_model_class
def _record(cls, *args, **kwargs):
    built.append(cls.__name__)
    return _complete(cls, *args, **kwargs)
_model_construction.complete_model_class = _record
from nisse_llm import LiteLLMClient, UserText
from nisse_llm.transport._tls import shared_ssl_context
with LiteLLMClient({base!r}, 'sk-first-use-000') as client:
    events = client.complete([UserText(text='hi')], None, 'gpt-x')
print(json.dumps({{
    "text": events[0].text,
    "loaded": sorted(name for name in {names!r} if name in sys.modules),
    "built": built,
    "ca_certs": shared_ssl_context().cert_store_stats()["x509_ca"],
}}))
"""


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    yield from serve()


def test_a_first_chat_call_loads_builds_and_reads_only_what_it_needs(
    server: LoopbackServer,
) -> None:
    program = _PROGRAM.format(base=server.base_url, names=NOT_NEEDED)
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert seen["text"] == "echo: hi"  # the call really went through
    assert seen["loaded"] == []
    assert seen["ca_certs"] == 0
    # The event, the reply body and the events and usage it becomes: nothing else.
    assert sorted(seen["built"]) == ["AssistantText", "OpenAIChatResponse", "Usage", "UserText"]


def test_chat_field_order_is_the_request_models() -> None:
    from nisse_llm.render.openai_chat_fields import CHAT_FIELDS

    skipped = ("model", "messages", "tools", "stream", "stream_options")
    assert (
        tuple(name for name in OpenAIChatRequest.model_fields if name not in skipped) == CHAT_FIELDS
    )


def test_values_made_without_validation_read_as_validated_ones() -> None:
    from nisse_llm.render._options import NO_OPTIONS
    from nisse_llm.transport._callinfo import _EMPTY

    assert CallInfo() == _EMPTY
    unset = RequestOptions()
    # What a call without options reads: every field of the model, each as it is unset.
    for name in RequestOptions.model_fields:
        assert getattr(NO_OPTIONS, name) == getattr(unset, name), name
    assert set(type(NO_OPTIONS).__dict__) - {"__doc__", "__module__", "__slots__"} == set(
        RequestOptions.model_fields
    )
