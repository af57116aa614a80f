"""One call as one value: a client builds a call's `CallParams` once, and its
``complete_call`` and ``stream_call`` send exactly what ``complete`` and ``stream`` send
for the same arguments; the scripted client takes the same value."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from pydantic import BaseModel

from nisse_llm import (
    AnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
    OpenAIResponsesClient,
    RequestOptions,
    UserText,
)
from nisse_llm.render import CallParams
from nisse_llm.stream.deltas import TextDelta
from nisse_llm.testing import Script, ScriptedClient, ScriptedTransport, ToolUse, reply
from nisse_llm.transport.clients import SyncRouteClient
from tests.transport.loopback import LoopbackServer, Reply

LOG = [UserText(text="Say it twice.")]
SYSTEM = "Be brief."
OPTIONS = RequestOptions(max_output_tokens=300, tool_choice="none")
CASES = [
    (LiteLLMClient, "openai_chat", "gpt-5.4-mini"),
    (AnthropicPassthroughClient, "anthropic_messages", "claude-sonnet-4-5"),
    (OpenAIResponsesClient, "openai_responses", "gpt-6-astra"),
]


def test_call_params_are_frozen_and_take_their_rules_as_a_copy() -> None:
    """A call's parameters cannot be changed in place; deciding its rules makes a new value."""
    params = CallParams(LOG, None, "gpt-5.4-mini", SYSTEM, max_tokens=64)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.model = "other"  # type: ignore[misc]
    rules = LiteLLMClient.ROUTE.decide("gpt-5.4-mini", None, max_tokens=64)
    decided = params.decided(rules)
    assert decided.rules is rules
    assert params.rules is None
    assert dataclasses.replace(decided, rules=None) == params


def test_a_clients_call_params_carry_its_ceiling_and_the_calls_cache_override() -> None:
    """``call_params`` fills in the client's output ceiling and prompt-cache policy, with
    the call's ``cache=`` turning that policy off for the one call."""
    with AnthropicPassthroughClient("http://proxy.test", "sk-test", max_tokens=777) as client:
        kept = client.call_params(LOG, None, "claude-sonnet-4-5", SYSTEM, options=OPTIONS)
        off = client.call_params(LOG, None, "claude-sonnet-4-5", SYSTEM, cache=False)
    assert (kept.max_tokens, kept.options, kept.system) == (777, OPTIONS, SYSTEM)
    assert kept.cache is not None
    assert kept.cache.enabled
    assert off.cache is not None
    assert not off.cache.enabled


@pytest.mark.parametrize(("cls", "route", "model"), CASES, ids=[c[1] for c in CASES])
def test_complete_call_and_stream_call_send_what_complete_and_stream_send(
    cls: type[SyncRouteClient], route: str, model: str
) -> None:
    """On every route the body sent from one `CallParams` equals the body the keyword
    methods send for the same arguments, whole and streamed."""
    script = Script().add(route, *[reply("Twice. Twice.")] * 4)
    with cls("http://proxy.test", "sk-test", transport=ScriptedTransport(script)) as client:
        client.complete(LOG, None, model, SYSTEM, options=OPTIONS)
        params = client.call_params(LOG, None, model, SYSTEM, options=OPTIONS)
        completion = client.complete_call(params)
        with client.stream(LOG, None, model, SYSTEM, options=OPTIONS) as stream:
            list(stream)
        with client.stream_call(params) as streamed:
            shown = "".join(d.text for d in streamed if isinstance(d, TextDelta))
    bodies = [request.body for request in script.requests_to(route)]
    assert bodies[0] == bodies[1]
    assert bodies[2] == bodies[3]
    assert completion.events[0].text == shown == "Twice. Twice."  # type: ignore[union-attr]


def test_the_async_client_completes_a_call_params() -> None:
    """The async client's ``complete_call`` sends the keyword method's body too."""
    script = Script().chat(reply("one"), reply("two"))

    async def run() -> list[str]:
        transport = ScriptedTransport(script)
        async with AsyncLiteLLMClient("http://proxy.test", "sk-test", transport=transport) as c:
            first = await c.completion(LOG, None, "gpt-5.4-mini", SYSTEM)
            second = await c.complete_call(c.call_params(LOG, None, "gpt-5.4-mini", SYSTEM))
        return [first.events[0].text, second.events[0].text]  # type: ignore[union-attr]

    assert asyncio.run(run()) == ["one", "two"]
    sent = script.requests_to("openai_chat")
    assert sent[0].body == sent[1].body


def test_the_scripted_client_takes_a_call_params() -> None:
    """The testing kit's scripted client records a call given as one value like any other."""
    client = ScriptedClient(["first", "second"])
    client.complete(LOG, None, "m", SYSTEM)
    completion = client.complete_call(client.call_params(LOG, None, "m", SYSTEM))
    assert completion.events[0].text == "second"  # type: ignore[union-attr]
    assert [(c.model, c.system, c.events) for c in client.calls] == [("m", SYSTEM, LOG)] * 2


class Plan(BaseModel):
    """A plan of work."""

    steps: list[str]


def test_complete_call_as_sends_what_complete_as_sends() -> None:
    """A typed answer asked from one `CallParams` sends the body the keyword method sends
    for the same arguments, and validates the same answer."""
    answer = reply(ToolUse("Plan", {"steps": ["read"]}))
    script = Script().chat(answer, answer)
    with LiteLLMClient("http://proxy.test", "sk-test", transport=ScriptedTransport(script)) as c:
        first = c.complete_as(Plan, LOG, None, "claude-sonnet-4-6", SYSTEM, options=OPTIONS)
        params = c.call_params(LOG, None, "claude-sonnet-4-6", SYSTEM, options=OPTIONS)
        second = c.complete_call_as(Plan, params)
    assert first.value == second.value == Plan(steps=["read"])
    sent = script.requests_to("openai_chat")
    assert sent[0].body == sent[1].body


def test_headroom_call_and_count_tokens_call_ask_about_the_same_request(
    server: LoopbackServer,
) -> None:
    """``headroom_call`` and ``count_tokens_call`` of a client's `CallParams` send the
    counter the request the keyword methods send, and read the same answer."""
    counted = Reply(200, b'{"total_tokens": 321}')
    models = Reply(200, b'{"data": []}')
    server.plan(counted, counted, models, counted, counted)  # the model list is read once
    with LiteLLMClient(server.base_url, "sk-test") as client:
        params = client.call_params(LOG, None, "gpt-5.4-mini", SYSTEM, options=OPTIONS)
        counts = [
            client.count_tokens("gpt-5.4-mini", LOG, None, SYSTEM, OPTIONS),
            client.count_tokens_call(params),
        ]
        rooms = [
            client.headroom("gpt-5.4-mini", LOG, None, SYSTEM, OPTIONS),
            client.headroom_call(params),
        ]
    assert counts == [321, 321]
    assert rooms[0] == rooms[1]
    bodies = [r.body for r in server.requests if r.path == "/utils/token_counter"]
    assert len(bodies) == 4
    assert len(set(bodies)) == 1
