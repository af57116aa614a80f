"""Images through the real LiteLLM proxy: both routes, both kinds of model entry, bytes intact."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nisse_llm import Image, ToolCall, ToolResult, UserImage, UserText
from nisse_llm.events.canonical import CanonicalEvent, ToolSpec
from nisse_llm.render.openai_chat import TOOL_IMAGES_LABEL
from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.images import png, screenshot
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.integration.helpers import COMBO_IDS, COMBOS, Combo, client_for

pytestmark = pytest.mark.proxy

SCREEN = screenshot(120_000, seed=7)
CAPTURE = png(64, 48, seed=8)
TOOLS = [
    ToolSpec(name="screenshot", description="Capture the page.", parameters={"type": "object"})
]


def images_in(value: Any) -> list[tuple[str, bytes]]:
    """Every image anywhere in an upstream body, in document order: (media type, bytes)."""
    found: list[tuple[str, bytes]] = []
    if isinstance(value, dict):
        source = value.get("source")
        if value.get("type") == "image" and isinstance(source, dict):
            assert source["type"] == "base64", source
            found.append((source["media_type"], base64.b64decode(source["data"])))
            return found
        if value.get("type") == "image_url":
            url = (
                value["image_url"]["url"]
                if isinstance(value["image_url"], dict)
                else value["image_url"]
            )
            header, _, data = url.partition(",")
            assert header.endswith(";base64"), header
            found.append((header[5:].split(";")[0], base64.b64decode(data)))
            return found
        for item in value.values():
            found.extend(images_in(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(images_in(item))
    return found


@pytest.mark.parametrize("combo", COMBOS, ids=COMBO_IDS)
def test_user_and_tool_images_reach_the_upstream_byte_identical(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """A screenshot in the user turn and one in a tool result arrive decoded to the same bytes."""
    script.add(
        combo.upstream,
        reply(ToolUse("screenshot", {"page": "/login"})),
        reply("The button overlaps."),
    )
    model = combo.model()
    log: list[CanonicalEvent] = [
        UserText(text="What is wrong with this page?"),
        UserImage(image=Image.from_bytes(SCREEN)),
    ]
    with client_for(proxy, combo.route) as h:
        (call,) = h.client.complete(log, TOOLS, model)
        assert isinstance(call, ToolCall)
        log += [
            call,
            ToolResult(
                call_id=call.call_id, output="captured", images=(Image.from_bytes(CAPTURE),)
            ),
        ]
        h.client.complete(log, TOOLS, model)
    first, second = (request.json for request in script.requests_to(combo.upstream))
    assert images_in(first) == [("image/png", SCREEN)]
    assert images_in(second) == [("image/png", SCREEN), ("image/png", CAPTURE)]
    last = second["messages"][-1]
    if combo.upstream == "anthropic_messages":
        # On both client routes the tool's image ends up in the user message that answers
        # the call: inside the tool_result (messages route, as rendered), or, from the chat
        # route's labelled image message, merged by LiteLLM right after the tool_result.
        kinds = [block["type"] for block in last["content"]]
        if combo.route == "messages":
            assert kinds == ["tool_result"]
            assert [b["type"] for b in last["content"][0]["content"]] == ["text", "image"]
        else:
            assert kinds == ["tool_result", "text", "image"]
            label = TOOL_IMAGES_LABEL.format(tool="screenshot", call_id=call.call_id)
            assert last["content"][1]["text"] == label
    else:
        # The OpenAI upstream gets the images in a user message after the tool message: ours
        # (chat route), or LiteLLM's own (messages route: it moves tool_result images there).
        assert [m["role"] for m in second["messages"][-3:]] == ["assistant", "tool", "user"]
        assert images_in(last) == [("image/png", CAPTURE)]
        assert images_in(second["messages"][-2]) == []


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(item) for item in value]
    return value


def test_litellm_translates_chat_image_parts_to_anthropic_image_blocks(
    proxy: LiteLLMProxy, script: Script
) -> None:
    """/chat/completions to an anthropic/ entry: image_url data URLs become base64 image
    blocks in the same user message as the text, media type and data unchanged."""
    script.messages(reply("A login form."))
    screen = Image.from_bytes(SCREEN)
    diagram = Image.from_bytes(png(10, 10, seed=9))
    log: list[CanonicalEvent] = [
        UserText(text="Compare the page"),
        UserImage(image=screen),
        UserText(text="with the design"),
        UserImage(image=diagram),
    ]
    with client_for(proxy, "chat") as h:
        h.client.complete(log, None, "claude-scripted")
    (request,) = script.requests_to("anthropic_messages")
    (message,) = request.json["messages"]

    def block(image: Image) -> dict[str, Any]:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": image.data},
        }

    # The log's last markable content is the diagram: its breakpoint reaches the image block.
    assert message["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert _strip_cache(message) == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Compare the page"},
            block(screen),
            {"type": "text", "text": "with the design"},
            block(diagram),
        ],
    }


def _urls_in(value: Any) -> list[str]:
    """Every image URL (not data URL) anywhere in an upstream body, in document order."""
    found: list[str] = []
    if isinstance(value, dict):
        source = value.get("source")
        if value.get("type") == "image" and isinstance(source, dict) and source["type"] == "url":
            return [source["url"]]
        if value.get("type") == "image_url":
            url = value["image_url"]["url"]
            return [] if url.startswith("data:") else [url]
        for item in value.values():
            found.extend(_urls_in(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_urls_in(item))
    return found


@pytest.mark.parametrize(
    "combo",
    [c for c in COMBOS if not (c.route == "chat" and c.family == "claude")],
    ids=lambda c: c.id,
)
def test_url_images_reach_the_upstream_as_urls(
    proxy: LiteLLMProxy, script: Script, combo: Combo
) -> None:
    """An http(s) image goes on as the same URL (the provider fetches it). Not on the chat
    route to an anthropic/ entry: there LiteLLM downloads the URL itself, off this machine."""
    url = "https://example.com/diagrams/flow.png"
    script.add(combo.upstream, reply("A flow chart."))
    log: list[CanonicalEvent] = [UserText(text="Explain"), UserImage(image=Image.from_url(url))]
    with client_for(proxy, combo.route) as h:
        h.client.complete(log, None, combo.model())
    (request,) = script.requests_to(combo.upstream)
    assert _urls_in(request.json) == [url]
