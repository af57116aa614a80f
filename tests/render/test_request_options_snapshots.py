"""The corpus rendered with role-style profiles on both routes, snapshot-locked.

Options change a body's envelope, never its messages or tools (but for the thinking blocks
the chat route replays with thinking on): each snapshot holds, per corpus conversation, the
body without those two (asserted equal to the plain render's) and where thinking blocks were
replayed, so a review sees exactly what a profile adds.
"""

from __future__ import annotations

from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm.config.options import RequestOptions
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from tests.corpus import corpus
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.option_judges import judge_chat_body

#: A planner: thinks hard under a large ceiling.
PLANNER = RequestOptions(reasoning="high", max_output_tokens=32000)
#: An executor: answers fast under a small ceiling, one tool at a time, stops at a marker.
EXECUTOR = RequestOptions(
    reasoning="off", max_output_tokens=2048, parallel_tool_calls=False, stop=("</done>",)
)
#: An executor on an OpenAI chat model (no reasoning model): a low temperature as well.
EXECUTOR_OPENAI = EXECUTOR.model_copy(update={"temperature": 0.2})
PROFILES = {"planner": PLANNER, "executor": EXECUTOR}
ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def _envelopes(route: str, options: RequestOptions, model: str | None = None) -> dict[str, Any]:
    envelopes: dict[str, Any] = {}
    for conversation in corpus():
        target = model or conversation.model
        args = (conversation.events, conversation.tools, target, conversation.system)
        if route == "messages":
            body = ANT.render(*args, options=options)
            plain = ANT.render(*args)
            assert anthropic_violations(body) == []
            assert official_violations(body) == []
        else:
            body = CHAT.render(*args, options=options, max_tokens=16384)
            plain = CHAT.render(*args, max_tokens=16384)
            judge_chat_body(body)
        replayed = {
            str(index): [block["type"] for block in message.pop("thinking_blocks")]
            for index, message in enumerate(body["messages"])
            if "thinking_blocks" in message
        }
        assert body["messages"] == plain["messages"]
        assert body.get("tools") == plain.get("tools")
        envelopes[conversation.name] = {
            key: value for key, value in body.items() if key not in ("messages", "tools")
        }
        if replayed:  # the chat route's thinking replay: message index -> block types
            envelopes[conversation.name]["thinking_blocks"] = replayed
    return envelopes


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("route", ["messages", "chat"])
def test_corpus_with_a_profile(route: str, profile: str, json_snapshot: SnapshotAssertion) -> None:
    assert _envelopes(route, PROFILES[profile]) == json_snapshot


def test_corpus_with_an_openai_executor_profile(json_snapshot: SnapshotAssertion) -> None:
    assert _envelopes("chat", EXECUTOR_OPENAI, model="gpt-4o-mini") == json_snapshot
