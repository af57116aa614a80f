"""Images on both routes: placement, official types, byte path, limits, encoding once, properties."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from nisse_llm import Image, ImageError, RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    CanonicalEvent,
    StoredEvent,
    ToolCall,
    ToolResult,
    UserImage,
    UserText,
)
from nisse_llm.render import _images
from nisse_llm.render import anthropic_messages as ant
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import (
    INTERRUPTED_RESULT,
    TOOL_IMAGES_LABEL,
    OpenAIChatRenderer,
)
from nisse_llm.testing.images import gif, jpeg, png, webp
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.openai_checker import check_chat_body
from tests.render.test_openai_official import judge_official, judge_schema
from tests.strategies import MODELS, logs

ANT = AnthropicMessagesRenderer()
CHAT = OpenAIChatRenderer()
MODEL = "claude-sonnet-4-5"
SHOT = Image.from_bytes(png(6, 4, seed=1))
PHOTO = Image.from_bytes(jpeg(10, 8))
ANIM = Image.from_bytes(gif(3, 3))
DIAGRAM = Image.from_bytes(webp(9, 7))
REMOTE = Image.from_url("https://example.com/diagram.png")
POOL = (SHOT, PHOTO, ANIM, DIAGRAM, REMOTE)
#: A header stating 9000 px: over every provider's limit.
HUGE = Image.from_bytes(png(9000, 2, pixels=False))


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.fixture
def cold() -> Iterator[None]:
    ANT.forget()
    CHAT.forget()
    yield
    ANT.forget()
    CHAT.forget()


def _call(call_id: str, tool: str = "screenshot") -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments={"page": call_id})


def scenario() -> list[CanonicalEvent]:
    """A user turn with a screenshot between texts, parallel calls whose results carry
    images and arrive out of order around user text, a blank-output result with images, a
    failed one with images, and a closing user image."""
    return [
        UserText(text="The login page looks broken:"),
        UserImage(image=SHOT),
        UserText(text="Compare with the design."),
        UserImage(image=DIAGRAM),
        AssistantText(text="Let me capture both pages.", model=MODEL),
        _call("c1"),
        _call("c2"),
        ToolResult(call_id="c2", output="signup page", images=(PHOTO, REMOTE)),
        UserText(text="(still waiting on the login capture)"),
        ToolResult(call_id="c1", output="", images=(ANIM,)),
        AssistantText(text="One more, with the console.", model=MODEL),
        _call("c3", "console"),
        ToolResult(call_id="c3", output="", is_error=True, images=(SHOT,)),
        UserImage(image=REMOTE),
    ]


ROUTES = {"messages": ANT, "chat": CHAT}


def _body(route: str, events: list[Any], cache: PromptCache | None = None) -> dict[str, Any]:
    raw = ROUTES[route].render_bytes(events, None, MODEL, "Be brief.", cache=cache)
    typed = ROUTES[route].render_request(events, None, MODEL, "Be brief.", cache=cache)
    assert raw == typed.model_dump_json(exclude_none=True).encode()
    decoded: dict[str, Any] = json.loads(raw)
    return decoded


def _judge(route: str, body: dict[str, Any], cached: bool) -> None:
    if route == "messages":
        assert anthropic_violations(body) == []
        assert official_violations(body) == []
    elif not cached:  # cache_control is LiteLLM's extension, unknown to the official types
        check_chat_body(body)
        judge_official(body)
        judge_schema(body)


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_scenario_snapshot_and_official_types(
    route: str, cached: bool, json_snapshot: SnapshotAssertion, cold: None
) -> None:
    """The image scenario renders to the locked body, valid by the official types, bytes equal."""
    cache = PromptCache() if cached else None
    body = _body(route, scenario(), cache)
    _judge(route, body, cached)
    assert body == json_snapshot


def _anthropic_source(image: Image) -> dict[str, Any]:
    if image.url is not None:
        return {"type": "url", "url": image.url}
    return {"type": "base64", "media_type": image.media_type, "data": image.data}


def _ablock(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": _anthropic_source(image)}


def _cpart(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.data_url}}


def test_messages_route_places_images_where_the_log_has_them(cold: None) -> None:
    """User images sit among the user texts in log order; a result's images follow its text."""
    body = _body("messages", scenario())
    first = body["messages"][0]["content"]
    assert first == [
        {"type": "text", "text": "The login page looks broken:"},
        _ablock(SHOT),
        {"type": "text", "text": "Compare with the design."},
        _ablock(DIAGRAM),
    ]
    answers = body["messages"][2]["content"]
    assert answers[0]["content"] == [_ablock(ANIM)]  # blank output: images only
    assert answers[1]["content"] == [
        {"type": "text", "text": "signup page"},
        *map(_ablock, (PHOTO, REMOTE)),
    ]
    assert answers[2] == {"type": "text", "text": "(still waiting on the login capture)"}
    failed = body["messages"][4]["content"][0]
    assert failed["is_error"] is True
    assert failed["content"] == [
        {"type": "text", "text": ant.EMPTY_ERROR_OUTPUT},
        _ablock(SHOT),
    ]
    assert body["messages"][4]["content"][1] == _ablock(REMOTE)
    image = body["messages"][0]["content"][1]["source"]
    assert base64.b64decode(image["data"]) == SHOT.to_bytes()


def test_messages_route_breakpoints_may_fall_on_image_blocks(cold: None) -> None:
    """With caching, the last markable block is the closing image: it carries the breakpoint."""
    body = _body("messages", scenario(), PromptCache())
    last = body["messages"][-1]["content"][-1]
    assert last["type"] == "image"
    assert last["cache_control"] == {"type": "ephemeral"}
    # A result that is nothing but images is markable too.
    events = [UserText(text="go"), _call("c1"), ToolResult(call_id="c1", output="", images=(SHOT,))]
    result = _body("messages", events, PromptCache())["messages"][-1]["content"][0]
    assert result["cache_control"] == {"type": "ephemeral"}


def test_chat_route_sends_tool_images_in_a_labelled_user_message_after_the_tool_messages(
    cold: None,
) -> None:
    """A turn's tool images follow its tool messages in one user message, by call order."""
    body = _body("chat", scenario())
    roles = [m["role"] for m in body["messages"]]
    assert roles == [
        "system", "user", "user", "user", "user",  # text, image, text, image
        "assistant", "tool", "tool", "user",  # the calls, their results, their images
        "user",  # the text that arrived while tools ran
        "assistant", "tool", "user",  # the failed console call and its image
        "user",  # the closing image
    ]  # fmt: skip
    assert body["messages"][2]["content"] == [_cpart(SHOT)]
    album = body["messages"][8]["content"]
    assert album == [
        {"type": "text", "text": TOOL_IMAGES_LABEL.format(tool="screenshot", call_id="c1")},
        _cpart(ANIM),
        {"type": "text", "text": TOOL_IMAGES_LABEL.format(tool="screenshot", call_id="c2")},
        _cpart(PHOTO),
        _cpart(REMOTE),
    ]
    assert body["messages"][7] == {"role": "tool", "tool_call_id": "c2", "content": "signup page"}
    assert album[1]["image_url"]["url"].startswith("data:image/gif;base64,")


def test_chat_route_sends_an_interrupted_turns_images_after_its_tool_messages(cold: None) -> None:
    """One result with images, its sibling never answered: interrupted tool message, then images."""
    events = [
        UserText(text="capture"),
        _call("a"),
        _call("b"),
        ToolResult(call_id="b", output="done", images=(SHOT,)),
    ]
    for prefix in (events[:3], events):  # grown through the cached path as well
        body = _body("chat", prefix)
    assert [m["role"] for m in body["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    assert body["messages"][3]["content"] == INTERRUPTED_RESULT
    assert body["messages"][5]["content"][1] == _cpart(SHOT)


def test_chat_route_breakpoints_fall_on_the_last_image_part(cold: None) -> None:
    """With caching, an image message's breakpoint goes on its last image part (LiteLLM
    forwards it to the Anthropic image block); a turn's tool images are markable too."""
    body = _body("chat", scenario(), PromptCache())
    assert body["messages"][-1]["content"] == [
        {**_cpart(REMOTE), "cache_control": {"type": "ephemeral"}}
    ]
    events = [
        UserText(text="go"),
        _call("c1"),
        _call("c2"),
        ToolResult(call_id="c1", output="one", images=(SHOT,)),
        ToolResult(call_id="c2", output="two", images=(PHOTO,)),
    ]
    for prefix in (events[:4], events):
        body = _body("chat", prefix, PromptCache())
    album = body["messages"][-1]["content"]
    assert [part.get("cache_control") for part in album] == [
        None,
        None,
        None,
        {"type": "ephemeral"},
    ]
    assert album[-1]["image_url"] == _cpart(PHOTO)["image_url"]


def test_a_log_breaking_a_limit_is_refused_naming_the_image_on_both_routes(cold: None) -> None:
    """An image over the limits: ImageError naming where it is; nothing is rendered."""
    user = [UserText(text="look"), UserImage(image=HUGE)]
    tool = [
        UserText(text="go"),
        _call("c9"),
        ToolResult(call_id="c9", output="x", images=(SHOT, HUGE)),
    ]
    for renderer in ROUTES.values():
        for render in (renderer.render_bytes, renderer.render_request):
            with pytest.raises(
                ImageError, match="the user image at log position 1 is 9000x2"
            ) as exc:
                render(user, None, MODEL)
            assert exc.value.image == "the user image at log position 1"
            with pytest.raises(
                ImageError, match=r"image 2 of the result for 'c9' \(log position 2\)"
            ):
                render(tool, None, MODEL)
    many = [UserText(text="many"), *[UserImage(image=SHOT)] * 101]
    with pytest.raises(ImageError, match="101 images"):
        ANT.render_bytes(many, None, MODEL)


def _count_encodings(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"messages": 0, "chat": 0}

    def counting(route: str, inner: Callable[[Image], bytes]) -> Callable[[Image], bytes]:
        def encode(image: Image) -> bytes:
            counts[route] += 1
            return inner(image)

        return encode

    monkeypatch.setattr(_images, "_anthropic_json", counting("messages", _images._anthropic_json))
    monkeypatch.setattr(_images, "_chat_json", counting("chat", _images._chat_json))
    return counts


def test_an_image_is_encoded_once_however_often_the_log_is_sent(
    monkeypatch: pytest.MonkeyPatch, cold: None
) -> None:
    """Re-sending a growing log encodes each image once per route, not once per call."""
    counts = _count_encodings(monkeypatch)
    shots = [Image.from_bytes(png(8, 8, seed=n)) for n in range(6)]
    log: list[StoredEvent] = []
    seq = 0

    def add(event: CanonicalEvent) -> None:
        nonlocal seq
        log.append(StoredEvent.now(seq, event))
        seq += 1

    for number, shot in enumerate(shots):
        add(UserText(text=f"screen {number}"))
        add(UserImage(image=shot))
        add(AssistantText(text="noted", model=MODEL))
        add(_call(f"t{number}"))
        add(ToolResult(call_id=f"t{number}", output="again", images=(shot,)))
        for cache in (None, PromptCache()):
            for renderer in ROUTES.values():
                renderer.render_bytes(log, None, MODEL, cache=cache)
    assert counts == {"messages": len(shots), "chat": len(shots)}


# --- properties ---------------------------------------------------------------------------


@st.composite
def image_logs(draw: st.DrawFn) -> list[CanonicalEvent]:
    """A valid log (`tests.strategies.logs`) with user images inserted anywhere and images
    on some results; now and then an image over the limits."""
    events = draw(logs(max_steps=20))
    over = draw(st.integers(0, 9)) == 9
    pool = st.sampled_from((*POOL, HUGE) if over else POOL)
    out: list[CanonicalEvent] = []
    for event in events:
        while draw(st.integers(0, 4)) == 4:
            out.append(UserImage(image=draw(pool)))
        if isinstance(event, ToolResult) and draw(st.booleans()):
            images = tuple(draw(st.lists(pool, min_size=1, max_size=3)))
            event = event.model_copy(update={"images": images})
        out.append(event)
    return out


def _image_key(image: Image) -> tuple[str, str]:
    return ("image", image.data_url)


def _user_side_anthropic(body: dict[str, Any]) -> tuple[list[Any], dict[str, list[Any]]]:
    """Outside results: the user texts and images in order; each result's content items."""
    items: list[Any] = []
    results: dict[str, list[Any]] = {}
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            if block["type"] == "text":
                items.append(("text", block["text"]))
            elif block["type"] == "image":
                items.append(_key_of_source(block["source"]))
            elif block["type"] == "tool_result":
                content = block.get("content")
                results[block["tool_use_id"]] = [
                    _key_of_source(part["source"])
                    if part["type"] == "image"
                    else ("text", part["text"])
                    for part in (content if isinstance(content, list) else [])
                ]
    return items, results


def _key_of_source(source: dict[str, Any]) -> tuple[str, str]:
    if source["type"] == "url":
        return ("image", str(source["url"]))
    return ("image", f"data:{source['media_type']};base64,{source['data']}")


def _expected_user_side(events: list[CanonicalEvent]) -> list[Any]:
    return [
        ("text", e.text) if isinstance(e, UserText) else _image_key(e.image)
        for e in events
        if isinstance(e, UserImage) or (isinstance(e, UserText) and e.text.strip())
    ]


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)


def _over_limit(events: list[CanonicalEvent]) -> bool:
    return any(
        image is HUGE
        for e in events
        for image in ((e.image,) if isinstance(e, UserImage) else getattr(e, "images", ()))
    )


@PROPERTY
@given(image_logs(), st.sampled_from(MODELS))
def test_any_log_with_images_renders_valid_on_the_messages_route(
    events: list[CanonicalEvent], model: str
) -> None:
    """Valid body keeping every image in place relative to its text, or the typed refusal."""
    if _over_limit(events):
        with pytest.raises(ImageError):
            ANT.render_bytes(events, None, model)
        return
    raw = ANT.render_bytes(events, None, model)
    assert (
        raw == ANT.render_request(events, None, model).model_dump_json(exclude_none=True).encode()
    )
    body = json.loads(raw)
    assert anthropic_violations(body) == []
    assert official_violations(body) == []
    items, results = _user_side_anthropic(body)
    expected = _expected_user_side(events)
    placeholders = (("text", ant.LEADING_PLACEHOLDER), ("text", ant.TRAILING_PLACEHOLDER))
    assert [i for i in items if i not in placeholders] == [
        i for i in expected if i not in placeholders
    ]
    for event in events:
        if isinstance(event, ToolResult) and event.images:
            sent = results[event.call_id]
            assert [i for i in sent if i[0] == "image"] == [
                _image_key(image) for image in event.images
            ]


@PROPERTY
@given(image_logs())
def test_any_log_with_images_renders_valid_on_the_chat_route(events: list[CanonicalEvent]) -> None:
    """Valid body; user images in order among user texts; each turn's tool images after its
    tool messages, labelled, in call order; or the typed refusal."""
    if _over_limit(events):
        with pytest.raises(ImageError):
            CHAT.render_bytes(events, None, MODEL)
        return
    raw = CHAT.render_bytes(events, None, MODEL)
    assert (
        raw == CHAT.render_request(events, None, MODEL).model_dump_json(exclude_none=True).encode()
    )
    body = json.loads(raw)
    check_chat_body(body)
    judge_official(body)
    judge_schema(body)
    user_side: list[Any] = []
    albums: list[Any] = []
    for index, message in enumerate(body["messages"]):
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            user_side.append(("text", content))
        elif content[0]["type"] == "text":  # a turn's tool images
            assert body["messages"][index - 1]["role"] == "tool"
            albums.extend(
                ("text", part["text"])
                if part["type"] == "text"
                else ("image", part["image_url"]["url"])
                for part in content
            )
        else:
            user_side.extend(("image", part["image_url"]["url"]) for part in content)
    assert user_side == _expected_user_side(events)
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    expected: list[tuple[str, str]] = []
    for call in calls:
        result = results.get(call.call_id)
        if result is not None and result.images:
            expected.append(
                ("text", TOOL_IMAGES_LABEL.format(tool=call.tool, call_id=call.call_id))
            )
            expected.extend(_image_key(image) for image in result.images)
    assert albums == expected


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
)
@given(image_logs(), st.data())
def test_growing_a_log_with_images_renders_as_if_from_scratch(
    events: list[CanonicalEvent], data: st.DataObject
) -> None:
    """Rendering prefixes in turn (resuming cached state) equals a cold render, both routes."""
    cuts = sorted(data.draw(st.sets(st.integers(1, len(events)), max_size=4)) | {len(events)})
    cache = data.draw(st.sampled_from([None, PromptCache()]))
    for renderer in (ANT, CHAT):
        warm: list[bytes] = []
        for cut in cuts:
            try:
                warm.append(renderer.render_bytes(events[:cut], None, MODEL, cache=cache))
            except ImageError:
                warm.append(b"image")
            except RenderError:  # a prefix may hold nothing to send
                warm.append(b"")
        renderer.forget()
        for cut, expected in zip(cuts, warm, strict=True):
            try:
                got = renderer.render_bytes(list(events[:cut]), None, MODEL, cache=cache)
            except ImageError:
                got = b"image"
            except RenderError:
                got = b""
            assert got == expected
