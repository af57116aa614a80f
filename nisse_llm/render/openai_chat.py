"""Canonical log <-> OpenAI chat-completions bodies (``POST {base}/chat/completions``).

Render rules, in the order a body is built:

- The system prompt, when not blank, is the first message.
- A turn is a run of `AssistantText`/`ToolCall`/`Reasoning` events ended by a `UserText`
  or `ToolResult`; it becomes one assistant message with its texts (joined by
  `ASSISTANT_TEXT_SEPARATOR`) and all its calls (arguments as a JSON string).
- Each call of the turn is answered right after that message, in call order, by a
  ``tool`` message: its result is moved up from wherever it sits in the log, so user text
  that arrived while tools ran follows the tool messages.
- A call with no result gets `INTERRUPTED_RESULT`. A result with no earlier call, a
  second result for one call, or a call id used twice is a corrupt log: `RenderError`.
- A failed tool run's output starts with `TOOL_ERROR_PREFIX` (the route has no error flag).
- Blank (empty or whitespace) text is left out, and so is an assistant message left with
  no text and no calls. `Reasoning` is sent only when the request enables Anthropic
  thinking (`RequestOptions.reasoning` for an Anthropic model): then the request model's own
  thinking blocks go back verbatim as the ``thinking_blocks`` of their turn's message, which
  LiteLLM puts at the head of the Anthropic message (a tool loop with thinking on needs them).
- A log with nothing left to send is a `RenderError`.
- A `UserImage` is a user message with one ``image_url`` part (a ``data:`` URL for bytes).
  A ``tool`` message cannot carry images, so a turn's tool images follow its tool messages
  in one user message: for each call in call order whose result has images,
  `TOOL_IMAGES_LABEL` then its images. A breakpoint on an image message goes on its last
  image part (LiteLLM forwards ``cache_control`` to the Anthropic image block). Images
  over a provider limit are an `ImageError` naming the image (`nisse_llm.events.images`).
- Tools passed are declared as function tools, with ``strict: true`` for a spec marked
  strict when the model takes strict tools (`CallRules.strict_tools`; two with one name
  are a `RenderError`; a schema without ``type`` gets ``"type": "object"``). With none passed but calls in the log,
  each tool name the log used is declared as a stub (`STUB_TOOL_DESCRIPTION`, parameters
  ``{"type": "object"}``) and ``tool_choice`` is ``"none"``: the history stays valid for
  servers that check it and the model cannot call them.
- ``max_tokens`` is sent when given; `RequestOptions` (ceiling, reasoning, sampling, stop
  sequences, tool choice, parallel calls) map to their fields by `nisse_llm.render.openai_chat_fields`,
  which refuses a combination the provider rejects.
- With a `PromptCache` policy that applies to the model (an Anthropic model, see
  `nisse_llm.render._cache`), breakpoints go where LiteLLM forwards them to Anthropic:
  ``cache_control`` on the last tool, and on a text part of the system message, of the
  last markable message and of the last one before the assistant message leading to it
  (the previous request's last). A marked message's string content becomes one text part;
  blank tool output and call-only assistant messages are not markable. Other models get
  the body unchanged.

Dump convention: the body is ``render_request(...).model_dump_json(exclude_none=True)``.
`render_bytes` builds the same bytes by joining per-event fragments memoised in
``_MEMO``, resuming from the progress cached for the longest already-rendered prefix of
the log (each renderer's own walks of its 16 latest logs, held strongly): an event already sent is
never encoded again, and a re-sent log costs its new events plus one join.

The reply side (parsing) lives in `nisse_llm.render.openai_chat_reply`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeAlias, assert_never, cast

import pydantic_core

from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    AssistantText,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserImage,
    UserText,
    WireEvent,
    log_items,
)
from nisse_llm.render._base import CallParams, Renderer, from_args
from nisse_llm.render._cache import active
from nisse_llm.render._images import (
    chat_image,
    chat_image_json,
    check_images_once,
    check_log_images,
)
from nisse_llm.render._memo import FragmentMemo
from nisse_llm.render._options import encode_fields
from nisse_llm.render._walk import (
    Indexed,
    ProgressCache,
    Shared,
    SlotsView,
    TurnWalk,
    object_schema,
    replayable_thinking,
    unique_specs,
)
from nisse_llm.render._walk import encode_model as _encode
from nisse_llm.render._walk import json_bytes as _json
from nisse_llm.render._wording import INTERRUPTED_TEXT, STUB_TOOL_DESCRIPTION, TOOL_ERROR_PREFIX
from nisse_llm.render.openai_chat_fields import chat_fields
from nisse_llm.render.openai_chat_reply import parse_chat_completion
from nisse_llm.routes.openai_chat import OPENAI_CHAT

# The typed request models load when a typed body or a tool definition is first made:
# a request from a log alone is spelled out in bytes and never builds them.
if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.openai_chat import (
        OpenAIChatCacheControl,
        OpenAIChatMessage,
        OpenAIChatRequest,
        OpenAIChatTextPart,
        OpenAIChatTool,
        OpenAIChatToolCall,
        OpenAIChatUserPart,
    )

__all__ = [
    "ASSISTANT_TEXT_SEPARATOR",
    "INTERRUPTED_RESULT",
    "STUB_TOOL_DESCRIPTION",
    "TOOL_ERROR_PREFIX",
    "TOOL_IMAGES_LABEL",
    "OpenAIChatRenderer",
]

#: The content of the synthetic result that answers a call the log never answered.
INTERRUPTED_RESULT = TOOL_ERROR_PREFIX + INTERRUPTED_TEXT
#: The description of a stub declared for a tool the log used but the request does not offer.
#: Labels a tool result's images in the user message that carries them (a ``tool`` message
#: cannot): formatted with the call's ``tool`` and ``call_id``.
TOOL_IMAGES_LABEL = "Images from the {tool} call {call_id}:"
#: Joins the texts of one assistant turn into one message.
ASSISTANT_TEXT_SEPARATOR = "\n\n"

_NOTHING_TO_SEND = (
    "the log has nothing to send: no non-blank text and no tool call "
    "(reasoning is not sent on the chat route)"
)
_STUB_PARAMETERS: dict[str, Any] = {"type": "object"}
_SEPARATOR_JSON = pydantic_core.to_json(ASSISTANT_TEXT_SEPARATOR)[1:-1]

#: One memo for the route: event or tool spec -> its encoded fragment (see `_map_fragment`).
_MEMO: FragmentMemo[object, Any] = FragmentMemo()


class _Turn:
    """One assistant message to send: its non-blank texts, all its calls, and the thinking
    blocks replayed with it (only when the request enables Anthropic thinking)."""

    __slots__ = ("calls", "texts", "thinking")

    def __init__(
        self,
        texts: list[AssistantText],
        calls: list[ToolCall],
        thinking: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.texts = texts
        self.calls = calls
        self.thinking = thinking


class _Album:
    """The user message after a turn's tool messages carrying its results' images.

    ``results`` are the turn's results that hold images (empty: no message is sent).
    Never changed once made (a new result makes a new album); compared by identity, as
    the memo that keeps its encoding keys it. A plain class, as `_Progress`: every
    program's first request defines them, and a dataclass costs ~0.4 ms to define.
    """

    __slots__ = ("__weakref__", "calls", "ids", "results")

    def __init__(
        self,
        calls: tuple[ToolCall, ...],
        results: tuple[ToolResult, ...] = (),
        ids: frozenset[str] = frozenset(),
    ) -> None:
        self.calls = calls
        self.results = results
        self.ids = ids

    def parts(self) -> list[tuple[ToolCall, ToolResult]]:
        """Each call with its result's images, in call order."""
        by_id = {result.call_id: result for result in self.results}
        return [(call, by_id[call.call_id]) for call in self.calls if call.call_id in by_id]


def _album(calls: Sequence[ToolCall], results: Iterable[ToolResult] = ()) -> _Album:
    return _Album(tuple(calls), tuple(results), frozenset(call.call_id for call in calls))


# What the body holds, in order: a user message (text or image), an assistant turn, a tool
# message for a result, (a bare ToolCall) the synthetic tool message of an unanswered call,
# or the user message with a turn's tool images.
_Slot: TypeAlias = UserText | UserImage | _Turn | ToolResult | ToolCall | _Album


def _unthought_loop(slots: list[_Slot]) -> bool:
    """Whether the last assistant turn made calls without thinking to replay (see
    `nisse_llm.render._options`: thinking is then left out of the request)."""
    for slot in reversed(slots):
        if isinstance(slot, _Turn):
            return bool(slot.calls) and not slot.thinking
    return False


def _result_content(result: ToolResult) -> str:
    return TOOL_ERROR_PREFIX + result.output if result.is_error else result.output


def _arguments_json(call: ToolCall) -> str:
    return _json(call.arguments).decode()


def _map_tool_call(call: ToolCall) -> OpenAIChatToolCall:
    from nisse_llm.wire.openai_chat import (
        OpenAIChatFunctionCall,
        OpenAIChatToolCall,
    )

    return OpenAIChatToolCall(
        id=call.call_id,
        function=OpenAIChatFunctionCall(name=call.tool, arguments=_arguments_json(call)),
    )


def _tool_message_content(slot: ToolResult | ToolCall) -> str:
    return _result_content(slot) if isinstance(slot, ToolResult) else INTERRUPTED_RESULT


def _map_content(
    text: str, control: OpenAIChatCacheControl | None
) -> str | list[OpenAIChatTextPart]:
    from nisse_llm.wire.openai_chat import OpenAIChatTextPart

    return text if control is None else [OpenAIChatTextPart(text=text, cache_control=control)]


def _map_message(slot: _Slot, control: OpenAIChatCacheControl | None = None) -> OpenAIChatMessage:
    from nisse_llm.wire.openai_chat import (
        OpenAIChatAssistantMessage,
        OpenAIChatTextPart,
        OpenAIChatToolMessage,
        OpenAIChatUserMessage,
    )

    if isinstance(slot, UserText):
        return OpenAIChatUserMessage(content=_map_content(slot.text, control))
    if isinstance(slot, UserImage | _Album):
        parts: list[OpenAIChatUserPart] = []
        if isinstance(slot, UserImage):
            parts.append(chat_image(slot.image))
        for call, result in slot.parts() if isinstance(slot, _Album) else ():
            label = TOOL_IMAGES_LABEL.format(tool=call.tool, call_id=call.call_id)
            parts.append(OpenAIChatTextPart(text=label))
            parts.extend(chat_image(image) for image in result.images)
        if control is not None:  # the breakpoint goes on the message's last image
            parts[-1] = parts[-1].model_copy(update={"cache_control": control})
        return OpenAIChatUserMessage(content=parts)
    if isinstance(slot, _Turn):
        text = ASSISTANT_TEXT_SEPARATOR.join(text.text for text in slot.texts)
        return OpenAIChatAssistantMessage(
            content=_map_content(text, control) if slot.texts else None,
            tool_calls=[_map_tool_call(call) for call in slot.calls] if slot.calls else None,
            thinking_blocks=list(slot.thinking) if slot.thinking else None,
        )
    if isinstance(slot, ToolResult | ToolCall):
        return OpenAIChatToolMessage(
            tool_call_id=slot.call_id, content=_map_content(_tool_message_content(slot), control)
        )
    assert_never(slot)


def _markable(slot: _Slot) -> bool:
    # Anthropic rejects a breakpoint on an empty text block; a call-only assistant
    # message has no text part to carry one.
    if type(slot) is _Turn:
        return bool(slot.texts)
    if type(slot) is ToolResult:
        return bool(_result_content(slot).strip())
    if type(slot) is _Album:
        return bool(slot.results)
    return True


def _last_markable(slots: Indexed[_Slot], start: int) -> int | None:
    for index in range(start, -1, -1):
        if _markable(slots[index]):
            return index
    return None


def _breakpoints(slots: Indexed[_Slot]) -> list[int]:
    """Indexes of the marked messages: the last markable one, and the last one before
    the assistant message leading to it (what the previous request marked last)."""
    latest = _last_markable(slots, len(slots) - 1)
    if latest is None:
        return []
    start = latest
    while start >= 0 and type(slots[start]) is not _Turn:
        start -= 1
    previous = _last_markable(slots, start - 1) if start > 0 else None
    return [latest] if previous is None else [previous, latest]


def _map_tool(spec: ToolSpec, strict: bool = False) -> OpenAIChatTool:
    from nisse_llm.wire.openai_chat import (
        OpenAIChatFunction,
        OpenAIChatTool,
    )

    # OpenAI: "Invalid schema for function 'f': schema must be a JSON Schema of 'type: "object"'".
    return OpenAIChatTool(
        function=OpenAIChatFunction(
            name=spec.name,
            description=spec.description or None,
            parameters=object_schema(spec.parameters),
            strict=True if strict and spec.strict else None,
        )
    )


def _declared(spec: ToolSpec, strict: bool) -> bytes:
    """A tool's encoded definition: once per spec object, or made strict for this model."""
    if strict and spec.strict:
        return _encode(_map_tool(spec, strict=True))
    return cast(bytes, _fragment(spec))


def _map_stub_tool(name: str) -> OpenAIChatTool:
    from nisse_llm.wire.openai_chat import (
        OpenAIChatFunction,
        OpenAIChatTool,
    )

    return OpenAIChatTool(
        function=OpenAIChatFunction(
            name=name, description=STUB_TOOL_DESCRIPTION, parameters=_STUB_PARAMETERS
        )
    )


def _tool_message_bytes(call_id: str, content: str) -> bytes:
    return (
        b'{"role":"tool","tool_call_id":' + _json(call_id) + b',"content":' + _json(content) + b"}"
    )


def _map_fragment(item: object) -> Any:
    """The encoded form of one event or tool spec, computed once per object (``_MEMO``).

    UserText: its user message; AssistantText: its text as a JSON string; ToolCall: its
    tool_call object and the synthetic tool message of its interruption; ToolResult: its
    tool message; ToolSpec: its tool definition. Messages are spelled out around
    pydantic-core's encoding of each value, in the wire models' field order, which is
    2-3x cheaper than building the models; tests hold them byte-identical to the dump.
    """
    if isinstance(item, UserText):
        return b'{"role":"user","content":' + _json(item.text) + b"}"
    if isinstance(item, UserImage):
        return b'{"role":"user","content":[' + chat_image_json(item.image) + b"]}"
    if isinstance(item, _Album):
        return _encode_album(item)
    if isinstance(item, AssistantText):
        return _json(item.text)
    if isinstance(item, ToolCall):
        call = (
            b'{"id":'
            + _json(item.call_id)
            + b',"type":"function","function":{"name":'
            + _json(item.tool)
            + b',"arguments":'
            + _json(_arguments_json(item))
            + b"}}"
        )
        return (call, _tool_message_bytes(item.call_id, INTERRUPTED_RESULT))
    if isinstance(item, ToolResult):
        return _tool_message_bytes(item.call_id, _result_content(item))
    if isinstance(item, ToolSpec):
        return _encode(_map_tool(item))
    raise TypeError(f"no chat fragment for {type(item).__name__}")


def _fragment(item: object) -> Any:
    return _MEMO.get(item, _map_fragment)


def _encode_album(album: _Album) -> bytes:
    """The user message of a turn's tool images; empty (nothing is sent) without any."""
    parts: list[bytes] = []
    for call, result in album.parts():
        label = TOOL_IMAGES_LABEL.format(tool=call.tool, call_id=call.call_id)
        parts.append(b'{"type":"text","text":' + _json(label) + b"}")
        parts.extend(chat_image_json(image) for image in result.images)
    if not parts:
        return b""
    return b'{"role":"user","content":[' + b",".join(parts) + b"]}"


def _marked_part(text: str, control: bytes) -> bytes:
    return b'[{"type":"text","text":' + _json(text) + b',"cache_control":' + control + b"}]"


def _encode_marked(slot: _Slot, control: bytes) -> bytes:
    """A message carrying a breakpoint: its text as one marked part, in the models' field order."""
    if isinstance(slot, UserText):
        return b'{"role":"user","content":' + _marked_part(slot.text, control) + b"}"
    if isinstance(slot, _Turn):
        return _encode_turn(slot.texts, slot.calls, control)
    if isinstance(slot, UserImage | _Album):
        # The message ends with its last image part: ``...}}]}``; the mark closes that part.
        encoded = cast(bytes, _fragment(slot))
        return encoded[:-3] + b',"cache_control":' + control + b"}]}"
    if isinstance(slot, ToolResult | ToolCall):
        content = _marked_part(_tool_message_content(slot), control)
        return (
            b'{"role":"tool","tool_call_id":'
            + _json(slot.call_id)
            + b',"content":'
            + content
            + b"}"
        )
    assert_never(slot)


def _encode_turn(
    texts: list[AssistantText], calls: list[ToolCall], control: bytes | None = None
) -> bytes:
    parts = [b'{"role":"assistant"']
    if texts and control is not None:
        text = ASSISTANT_TEXT_SEPARATOR.join(t.text for t in texts)
        parts.append(b',"content":' + _marked_part(text, control))
    elif texts:
        if len(texts) == 1:
            parts.append(b',"content":' + cast(bytes, _fragment(texts[0])))
        else:
            inner = _SEPARATOR_JSON.join(cast(bytes, _fragment(t))[1:-1] for t in texts)
            parts.append(b',"content":"' + inner + b'"')
    if calls:
        encoded = b",".join(cast(tuple[bytes, bytes], _fragment(c))[0] for c in calls)
        parts.append(b',"tool_calls":[' + encoded + b"]")
    parts.append(b"}")
    return b"".join(parts)


def _interrupted_fragment(call: ToolCall) -> bytes:
    return cast(tuple[bytes, bytes], _fragment(call))[1]


def _album_bytes(album: _Album) -> bytes:
    return cast(bytes, _fragment(album)) if album.results else b""


class _Maker:
    """The walk's entries on this route as plain slots (the typed path maps them)."""

    @staticmethod
    def keeps(event: Reasoning, tag: object) -> bool:
        # Thinking is replayed only for the model the request names (``tag``).
        return tag is not None and event.model == tag and replayable_thinking(event.block)

    def user(self, event: UserText | UserImage) -> tuple[bytes | None, _Slot]:
        return None, event

    def turn(self, events: list[WireEvent]) -> list[tuple[bytes | None, _Slot]]:
        texts = [e for e in events if type(e) is AssistantText]
        calls = [e for e in events if type(e) is ToolCall]
        thinking = tuple(dict(e.block) for e in events if type(e) is Reasoning)
        return [(self.encode_turn(texts, calls), _Turn(texts, calls, thinking))]

    def encode_turn(self, texts: list[AssistantText], calls: list[ToolCall]) -> bytes | None:
        return None

    def answer(self, call: ToolCall, result: ToolResult | None) -> bytes | None:
        return None

    def album(self, album: _Album) -> bytes | None:
        return None


class _Bytes(_Maker):
    """The walk's entries as encoded messages (memoised fragments), beside their slots."""

    def user(self, event: UserText | UserImage) -> tuple[bytes | None, _Slot]:
        return cast(bytes, _fragment(event)), event

    def encode_turn(self, texts: list[AssistantText], calls: list[ToolCall]) -> bytes | None:
        return _encode_turn(texts, calls)

    def answer(self, call: ToolCall, result: ToolResult | None) -> bytes | None:
        return _interrupted_fragment(call) if result is None else cast(bytes, _fragment(result))

    def album(self, album: _Album) -> bytes | None:
        return _album_bytes(album)


_TYPED = _Maker()
_BYTES = _Bytes()


class _ChatWalk(TurnWalk):
    """The shared walk (`nisse_llm.render._walk`), with the image message after each turn
    with calls: ``albums`` holds each closed turn's album while a call of it is still
    unanswered, by index (a later log may add images to it in the shared list, so this
    walk keeps its own)."""

    __slots__ = ("albums",)

    def __init__(self, shared: Shared, make: _Maker, tag: object = None) -> None:
        super().__init__(shared, make, tag)
        self.albums: dict[int, _Album] = {}

    def copy(self) -> Self:
        other = super().copy()
        other.albums = dict(self.albums)
        return other

    def rewind(self) -> None:
        super().rewind()
        make = cast(_Maker, self.make)
        for index, album in self.albums.items():
            self.shared.entries[index] = make.album(album)
            self.shared.slots[index] = album

    def closed(self, calls: list[ToolCall]) -> None:
        if calls:
            # Where the turn's tool images go; sent only once a result brings some.
            album = _album(calls)
            self.albums[len(self.shared.entries)] = album
            self.append(None, album)

    def answered(self, result: ToolResult) -> None:
        """Add a result's images to its turn's album; let go of the album once the turn
        is fully answered (it can no longer change)."""
        shared = self.shared
        found = [item for item in self.albums.items() if result.call_id in item[1].ids]
        if not found:  # pragma: no cover - every closed turn with calls has an album
            return
        index, album = found[0]
        if result.images:
            album = _Album(album.calls, (*album.results, result), album.ids)
            self.albums[index] = album
            shared.entries[index] = cast(_Maker, self.make).album(album)
            shared.slots[index] = album
        if not any(call.call_id in self.holes for call in album.calls):
            del self.albums[index]

    def finish_slots(self, start: int) -> tuple[int, list[bytes | None], SlotsView[_Slot]]:
        """How many messages to send, those from ``start`` on (the open turn closed, every
        unanswered call answered), and what each renders."""
        count, rest = self.finish(start)
        make = cast(_Maker, self.make)
        for index, album in self.albums.items():
            if index >= start:
                rest[index - start] = make.album(album)
        _, extra = self.open_turn()
        pinned: dict[int, _Slot] = {**dict(self.holes.values()), **self.albums}
        slots = SlotsView(self.shared.slots, self.m, pinned, extra)
        return count, rest, slots


def _option_fields(
    options: RequestOptions | None,
    model: str,
    rules: CallRules,
    specs: list[ToolSpec],
    used_tools: bool,
    unthought: bool = False,
) -> dict[str, Any]:
    """The fields after ``tools`` (`nisse_llm.render.openai_chat_fields`); with no tools passed but
    calls in the log, the stubs are declared with ``tool_choice: none``."""
    return chat_fields(
        options,
        model=model,
        rules=rules,
        tools=[spec.name for spec in specs],
        stubbed=not specs and used_tools,
        unthought_loop=unthought,
    )


def _empty_album(slot: _Slot) -> bool:
    return type(slot) is _Album and not slot.results


def _envelope(
    model: str,
    system: str | None,
    rules: CallRules,
    options: RequestOptions | None,
    specs: list[ToolSpec],
    used: list[str],
    control: bytes | None,
) -> tuple[bytes, bytes]:
    """The body's bytes before its first message and after its last (the byte path keeps
    them per renderer: an agent sends the same model, system, tools and options each call)."""
    fields = _option_fields(options, model, rules, specs, bool(used))
    head = b'{"model":' + pydantic_core.to_json(model) + b',"messages":['
    if system is not None and system.strip():
        head += b'{"role":"system","content":'
        head += _json(system) if control is None else _marked_part(system, control)
        head += b"},"
    tail = [b"]"]
    declared: list[bytes] = []
    if specs:
        strict = rules.strict_tools
        declared = [_declared(spec, strict) for spec in specs]
    elif used:
        declared = [_encode(_map_stub_tool(name)) for name in used]
    if declared:
        if control is not None:
            declared[-1] = declared[-1][:-1] + b',"cache_control":' + control + b"}"
        tail += [b',"tools":[', b",".join(declared), b"]"]
    tail += encode_fields(fields)
    tail.append(b"}")
    return head, b"".join(tail)


class OpenAIChatRenderer(Renderer):
    """Renders canonical logs as chat-completions requests and parses the replies."""

    reply_parser = staticmethod(parse_chat_completion)
    route = OPENAI_CHAT

    @from_args
    def render_request(self, call: CallParams) -> OpenAIChatRequest:
        """The typed request body of the call (see the module docstring for the rules)."""
        return self._typed(call)

    def _typed(self, call: CallParams) -> OpenAIChatRequest:
        from nisse_llm.wire.openai_chat import (
            OpenAIChatCacheControl,
            OpenAIChatRequest,
            OpenAIChatSystemMessage,
        )

        events, tools, model, system = call.events, call.tools, call.model, call.system
        items = log_items(events)
        check_log_images(items)
        cache, options, rules = call.cache, call.options, self.rules_for(call)
        replay = model if rules.replays_thinking else None
        walk = _ChatWalk(Shared(), _TYPED, replay)
        walk.consume(list(items))
        count, _, view = walk.finish_slots(0)
        slots = [slot for slot in (view[index] for index in range(count)) if not _empty_album(slot)]
        if not slots:
            raise RenderError(_NOTHING_TO_SEND)
        used_tools = walk.used_tools()
        specs = unique_specs(tools)
        unthought = replay is not None and _unthought_loop(slots)
        if unthought:  # thinking is left out, so no turn carries thinking blocks either
            slots = [
                _Turn(slot.texts, slot.calls) if type(slot) is _Turn else slot for slot in slots
            ]
        fields = _option_fields(options, model, rules, specs, bool(used_tools), unthought)
        policy = active(cache, model)
        control = None if policy is None else OpenAIChatCacheControl(ttl=policy.marker_ttl)
        marks = set() if control is None else set(_breakpoints(slots))
        messages: list[OpenAIChatMessage] = []
        if system is not None and system.strip():
            messages.append(OpenAIChatSystemMessage(content=_map_content(system, control)))
        messages.extend(
            _map_message(slot, control if index in marks else None)
            for index, slot in enumerate(slots)
        )
        declared: list[OpenAIChatTool] | None = None
        if specs:
            declared = [_map_tool(spec, rules.strict_tools) for spec in specs]
        elif used_tools:
            declared = [_map_stub_tool(name) for name in used_tools]
        if declared and control is not None:
            declared[-1] = declared[-1].model_copy(update={"cache_control": control})
        return OpenAIChatRequest(model=model, messages=messages, tools=declared, **fields)

    def encode_parts(self, call: CallParams) -> list[bytes]:
        """The body of ``call`` in parts (`Renderer.render_parts`), under the walk cache's
        lock."""
        events, tools, model, system = call.events, call.tools, call.model, call.system
        max_tokens, cache, options, rules = call.max_tokens, call.cache, call.options, call.rules
        assert rules is not None, "the route decides a call's rules before it is encoded"
        if rules.replays_thinking:
            # Thinking blocks ride on their turns: the typed path (the fragments hold none).
            return [_encode(self._typed(call))]
        walks: ProgressCache[_ChatWalk] = self._walks
        progress = walks.walk(log_items(events), None, lambda shared: _ChatWalk(shared, _BYTES))
        check_images_once(progress)
        specs = unique_specs(tools)
        used = progress.used_tools()
        policy = active(cache, model)
        control = None if policy is None else policy.control_json
        prefixes = () if cache is None else cache.prefixes
        # Stub tools are known by name (all a stub depends on), passed specs by identity.
        key = (model, system, max_tokens, options, control, prefixes, () if specs else tuple(used))
        head, tail = self._envelopes.get(
            key,
            tuple(specs),
            lambda: _envelope(model, system, rules, options, specs, used, control),
        )
        count, rest, slots = progress.finish_slots(progress.rope.covered)
        if not count:
            raise RenderError(_NOTHING_TO_SEND)
        marks = [] if control is None else _breakpoints(slots)
        # The last message always goes fresh, so the final part is never a bare block (an
        # image message still without images is no message: the one before it goes fresh).
        last = count - 1
        if _empty_album(slots[last]):
            last -= 1
        limit = min([last, *marks])
        base = progress.rope.covered
        blocks, start = progress.grow_rope(limit).usable(limit)
        if start != base:  # the rope grew, or this call marks a message it covers
            count, rest, slots = progress.finish_slots(start)
        if control is not None:
            for index in marks:
                rest[index - start] = _encode_marked(slots[index], control)
        sent = [message for message in rest if message]
        sent[-1] += tail
        return [head, *blocks, b",".join(sent)]
