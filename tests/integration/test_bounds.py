"""Bounded replies through the real proxy: what LiteLLM sends decodes, a stream ends at its
final event with the connection kept for the next call, and a reply past the cap is
`UpstreamUnavailable` without harming the next call."""

from __future__ import annotations

import re
from typing import Any

import pytest

from nisse_llm.errors import UpstreamUnavailable
from nisse_llm.events.canonical import AssistantText, UserText
from nisse_llm.testing import Script, reply
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.clients import AnthropicPassthroughClient, LiteLLMClient
from tests.integration.helpers import COMBO_IDS, COMBOS, Combo

pytestmark = pytest.mark.proxy

LOG = [UserText(text="Say something.")]
CAP = re.escape("llm.max_response_bytes")


def _client(proxy: LiteLLMProxy, combo: Combo, **options: Any) -> Any:
    cls = LiteLLMClient if combo.route == "chat" else AnthropicPassthroughClient
    return cls(proxy.base_url, proxy.token, max_tokens=1024, **options)


def _pool(client: Any) -> list[Any]:
    return list(client._http._transport._inner._pool.connections)


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_streams_end_at_their_final_event_and_keep_the_connection(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """stream, complete, stream on one client through LiteLLM: each reply whole, and the
    pool does not grow after the first stream (each stream released its connection at its
    final event). The first stream opens a second connection once, to read the model's
    prices for its cost while it streams; both are idle at the end."""
    texts = ["first streamed reply", "a completed reply", "second streamed reply"]
    script.add(combo.upstream, *(reply(text) for text in texts))
    with _client(proxy, combo, call_deadline_s=60, stream_deadline_s=60) as client:
        with client.stream(LOG, None, combo.model()) as stream:
            list(stream)
        first = stream.events
        after_first = len(_pool(client))
        assert after_first <= 2
        second = client.complete(LOG, None, combo.model())
        with client.stream(LOG, None, combo.model()) as stream:
            list(stream)
        third = stream.events
        assert len(_pool(client)) == after_first
        assert all(connection.is_idle() for connection in _pool(client))
    got = [
        [e.text for e in events if isinstance(e, AssistantText)]
        for events in (first, second, third)
    ]
    assert got == [[text] for text in texts]


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_a_reply_past_the_cap_is_upstream_unavailable_and_the_next_call_works(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """A 20 KB reply with max_response_bytes=4096: UpstreamUnavailable naming the setting,
    complete and stream; a small reply on the same client then succeeds."""
    long_text = "word " * 4000
    script.add(combo.upstream, reply(long_text), reply(long_text), reply("short"))
    with _client(proxy, combo, max_response_bytes=4096) as client:
        with pytest.raises(UpstreamUnavailable, match=CAP):
            client.complete(LOG, None, combo.model())
        with (
            pytest.raises(UpstreamUnavailable, match=CAP),
            client.stream(LOG, None, combo.model()) as stream,
        ):
            list(stream)
        events = client.complete(LOG, None, combo.model())
    assert [e.text for e in events if isinstance(e, AssistantText)] == ["short"]
