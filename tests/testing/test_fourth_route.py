"""A fourth route costs its own modules and one table entry: a toy route defined in the
test tree is registered at test time, then rendered, parsed, streamed and served through
the testing kit, with no package module changed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from nisse_llm import AssistantText, Usage, UserText
from nisse_llm.routes import ROUTE_TABLE
from nisse_llm.stream.deltas import TextDelta, accumulator_for
from nisse_llm.testing import Script, ScriptedServer, ScriptedTransport, Tokens, reply
from nisse_llm.testing.script import route_of_path
from nisse_llm.testing.sse import sse_stream
from nisse_llm.transport.clients import ASYNC_CLIENTS, SYNC_CLIENTS
from tests.testing.fourth_route_toy import NAME, TOY_ROUTE, AsyncToyClient, ToyClient

LOG = [
    UserText(text="Count to four."),
    AssistantText(text="1, 2, 3", model="m"),
    UserText(text="And?"),
]
SAID = "Four: the fourth route answers."


@pytest.fixture
def fourth_route() -> Iterator[None]:
    """The toy route registered in the table for one test, then taken out."""
    ROUTE_TABLE.register(TOY_ROUTE)
    try:
        yield
    finally:
        ROUTE_TABLE.unregister(NAME)


def test_the_fourth_route_is_found_by_every_dispatch(fourth_route: None) -> None:
    """Once registered, the table hands out its clients, its accumulator and its path."""
    assert SYNC_CLIENTS[NAME] is ToyClient
    assert ASYNC_CLIENTS[NAME] is AsyncToyClient
    assert route_of_path("/api/v1/toy/say?x=1") == NAME
    assert type(accumulator_for(NAME, requested_model="m", parse=print)).__name__ == (
        "ToyStreamAccumulator"
    )
    assert ToyClient("http://127.0.0.1:9", "sk-test").route == NAME


def test_the_fourth_route_renders_and_parses(fourth_route: None) -> None:
    """Its renderer renders a log into its wire body and parses its reply."""
    renderer = ROUTE_TABLE[NAME].new_renderer()
    body = renderer.render(LOG, None, "toy-model", max_tokens=64)
    assert body == {
        "model": "toy-model",
        "lines": [
            {"who": "user", "text": "Count to four."},
            {"who": "assistant", "text": "1, 2, 3"},
            {"who": "user", "text": "And?"},
        ],
        "max_tokens": 64,
    }
    reply_body = {"model": "toy-1", "say": "Four.", "usage": {"in": 9, "out": 2}}
    completion = renderer.parse(json.dumps(reply_body), requested_model="toy-model")
    assert completion.events == [AssistantText(text="Four.", model="toy-model")]
    assert completion.usage == Usage(input=9, output=2)


def test_the_fourth_route_streams_through_its_accumulator(fourth_route: None) -> None:
    """The kit's stream of a reply, fed in small chunks, rebuilds the reply as `parse` reads it."""
    renderer = ROUTE_TABLE[NAME].new_renderer()
    body = {"model": "toy-1", "say": SAID, "usage": {"in": 5, "out": 7}}
    data = sse_stream(NAME, body, chunk_size=5)
    acc = accumulator_for(NAME, requested_model="toy-model", parse=renderer.parse)
    deltas = [d for i in range(0, len(data), 3) for d in acc.feed(data[i : i + 3])]
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == SAID
    assert acc.finish() == renderer.parse(body, requested_model="toy-model")


def test_the_fourth_route_is_served_by_the_testing_kit_over_a_socket(fourth_route: None) -> None:
    """The kit's loopback upstream answers the toy route: a complete and a stream through
    the package's own client exchange, each request recorded under the route."""
    script = Script().add(NAME, reply(SAID, usage=Tokens(input=11, output=6)), reply(SAID))
    with ScriptedServer(script) as server, ToyClient(server.base_url, "sk-test") as client:
        completion = client.completion(LOG, None, "toy-model")
        with client.stream(LOG, None, "toy-model") as stream:
            shown = "".join(d.text for d in stream if isinstance(d, TextDelta))
    assert completion.events == [AssistantText(text=SAID, model="toy-model")]
    assert completion.usage == Usage(input=11, output=6)
    assert shown == SAID
    assert stream.events == completion.events
    sent = script.requests_to(NAME)
    assert [(r.path, r.route) for r in sent] == [("/v1/toy/say", NAME)] * 2
    assert sent[0].json["lines"][-1] == {"who": "user", "text": "And?"}
    assert sent[1].json["stream"] is True
    assert sent[0].headers["authorization"] == "Bearer sk-test"


def test_the_fourth_route_fails_as_every_route_fails(fourth_route: None) -> None:
    """A request the script has no turn for gets the route's own error body, classified
    by the package as any route's 500."""
    from nisse_llm.errors import UpstreamUnavailable

    with (
        ScriptedTransport(Script()) as transport,
        ToyClient("http://toy.test", "sk-test", transport=transport) as client,
        pytest.raises(UpstreamUnavailable, match="no turn left for toy_fourth_route"),
    ):
        client.complete(LOG, None, "toy-model")


def test_the_async_fourth_route_client_completes_and_streams(fourth_route: None) -> None:
    """The async client of the toy route runs the same exchange in process."""
    script = Script().add(NAME, reply("one"), reply(SAID))

    async def run() -> tuple[str, str]:
        transport = ScriptedTransport(script)
        async with AsyncToyClient("http://toy.test", "sk-test", transport=transport) as client:
            first = await client.complete(LOG, None, "toy-model")
            async with client.stream(LOG, None, "toy-model") as stream:
                shown = "".join([d.text async for d in stream if isinstance(d, TextDelta)])
        return first[0].text, shown  # type: ignore[union-attr]

    assert asyncio.run(run()) == ("one", SAID)
