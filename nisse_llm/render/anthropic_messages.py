"""The Anthropic messages route: canonical log -> request body, response body -> canonical events.

Render rules (each answers something the API rejects):

- ``system`` goes top level (left out when blank); ``max_tokens`` is always sent.
- `RequestOptions` (ceiling, thinking, stop sequences, tool choice) map to their fields by
  `nisse_llm.render.anthropic_messages_fields`, which refuses a combination the API rejects.
- Roles alternate and the first message is ``user``: adjacent same-role content is
  merged into one message. A log that opens with assistant content gets
  `LEADING_PLACEHOLDER` as its first user message; one that ends with assistant content
  gets `TRAILING_PLACEHOLDER` after it (newer models reject assistant prefill).
- Every ``tool_use`` is answered in the very next user message, which opens with the
  results of all that turn's calls, in call order: results move up from wherever the log
  has them, and user text that arrived while tools ran follows them. A call without a
  result gets an ``is_error`` result, `INTERRUPTED_RESULT`. A result whose call is not
  earlier in the log, or a second call or result with one id, is a `RenderError`.
- Empty or whitespace-only text is left out; a message left empty disappears and its
  neighbours merge. A result with blank output is sent without content (a failed one
  with `EMPTY_ERROR_OUTPUT`, since an error result needs content). ``is_error`` is native.
- `Reasoning` is replayed only when the request names the model string that produced it,
  only a ``thinking``/``redacted_thinking`` block exactly as stored, and only at the head
  of an assistant message that also carries text or a call ("If an assistant message
  contains any thinking blocks, the first block must be thinking"); else it is left out.
- Calls in the log but no tools passed: one stub tool per called name
  (`STUB_TOOL_DESCRIPTION`, schema ``{"type": "object"}``) and ``tool_choice: none``, as
  the API requires tools whenever ``tool_use`` blocks are present. Two tools with one
  name are a `RenderError`; a schema without ``type`` gets ``"type": "object"``. A tool
  marked strict (`ToolSpec.strict`) whose schema also fits Anthropic's strict subset goes
  with ``strict: true`` to a Claude model with structured outputs
  (`CallRules.strict_messages_tools`); otherwise with no ``strict`` field.
- An empty log, or one with nothing left to send, is a `RenderError`.
- A `UserImage` is an ``image`` block (``base64`` or ``url`` source) in the user message,
  in log order among the user's texts; a result's images follow its text inside the
  ``tool_result`` content (a list then). Image blocks may carry a cache breakpoint. Images
  over a provider limit are an `ImageError` naming the image (`nisse_llm.events.images`).

`render_bytes` is byte-identical to ``render_request(...).model_dump_json(exclude_none=True)``
(UTF-8): each event's block is encoded once (memoised per event), a log that extends one
rendered before resumes that log's plan, finished messages keep their bytes, and the
body is one join; re-sending a grown log costs its new events, not its history.

The reply side (parsing) lives in `nisse_llm.render.anthropic_messages_reply`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal, Self, TypeAlias, assert_never, cast

from pydantic_core import to_json

from nisse_llm.config.call_rules import CallRules
from nisse_llm.config.options import RequestOptions
from nisse_llm.errors import RenderError
from nisse_llm.events.canonical import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    AssistantText,
    LogLike,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolsLike,
    ToolSpec,
    UserImage,
    UserText,
    WireEvent,
    log_items,
)
from nisse_llm.events.tools import strict_problem
from nisse_llm.render._anthropic_blocks import (
    EMPTY_ERROR_CONTENT,
    EMPTY_ERROR_OUTPUT,
    INTERRUPTED_RESULT,
    encode_result_with_images,
    interrupted,
    map_result,
    map_tool,
    stub_tool,
)
from nisse_llm.render._base import CallParams, Renderer, from_args
from nisse_llm.render._cache import PromptCache, active
from nisse_llm.render._images import (
    anthropic_image,
    anthropic_image_json,
    check_images_once,
    event_images,
)
from nisse_llm.render._memo import FragmentMemo, RecentMemo
from nisse_llm.render._rope import Rope
from nisse_llm.render._walk import (
    Indexed,
    Progress,
    ProgressCache,
    Shared,
    SlotsView,
    bare_events,
    encode_model,
    replayable_thinking,
    unencodable,
    unique_specs,
)
from nisse_llm.render._wording import STUB_TOOL_DESCRIPTION
from nisse_llm.render.anthropic_messages_fields import messages_fields
from nisse_llm.render.anthropic_messages_reply import parse_message
from nisse_llm.routes.anthropic_messages import ANTHROPIC_MESSAGES
from nisse_llm.wire.anthropic_messages import (
    AnthropicCacheControl,
    AnthropicMessage,
    AnthropicMessagesRequest,
    AnthropicRedactedThinkingBlock,
    AnthropicRequestBlock,
    AnthropicTextBlock,
    AnthropicThinkingBlock,
    AnthropicTool,
    AnthropicToolUseBlock,
)

__all__ = [
    "EMPTY_ERROR_OUTPUT",
    "INTERRUPTED_RESULT",
    "LEADING_PLACEHOLDER",
    "STUB_TOOL_DESCRIPTION",
    "TRAILING_PLACEHOLDER",
    "AnthropicMessagesRenderer",
]

LEADING_PLACEHOLDER = "(This conversation continues from an earlier session.)"
TRAILING_PLACEHOLDER = "(Continue.)"

logger = logging.getLogger(__name__)

_EVENT_TYPES = frozenset({UserText, UserImage, AssistantText, ToolCall, ToolResult, Reasoning})

#: Each event's encoded block, computed once per event object (events are frozen).
_FRAGMENTS: FragmentMemo[WireEvent, bytes] = FragmentMemo()
#: The encoded interrupted-result block answering each call that has no result.
_INTERRUPTED: FragmentMemo[ToolCall, bytes] = FragmentMemo()
#: Each tool spec's wire tool, built (and its schema validated) once per spec object.
_TOOLS: FragmentMemo[ToolSpec, AnthropicTool] = FragmentMemo()
#: Each tool spec's wire tool where the model takes strict tools (``strict: true`` when
#: its schema fits Anthropic's strict subset as well as OpenAI's).
_STRICT_TOOLS: FragmentMemo[ToolSpec, AnthropicTool] = FragmentMemo()
#: The marker of each TTL, shared: request models are never mutated once built.
_CONTROLS: dict[str | None, AnthropicCacheControl] = {
    None: AnthropicCacheControl(),
    "1h": AnthropicCacheControl(ttl="1h"),
}
#: Each wire tool carrying a breakpoint, by marker TTL: built once per tool object.
_MARKED_TOOLS: dict[str | None, FragmentMemo[AnthropicTool, AnthropicTool]] = {
    None: FragmentMemo(),
    "1h": FragmentMemo(),
}

# A ToolCall inside a user turn is a hole: the place its result goes once it arrives
# (an interrupted result if it never does).
_Source: TypeAlias = (
    UserText | UserImage | AssistantText | ToolCall | ToolResult | Reasoning | AnthropicTextBlock
)
_Role: TypeAlias = Literal["user", "assistant"]
_MESSAGE_OPEN: dict[_Role, bytes] = {
    "user": b'{"role":"user","content":[',
    "assistant": b'{"role":"assistant","content":[',
}


@dataclass(slots=True)
class _Turn:
    """One message: its role and block sources; ``encoded`` once it has been encoded.

    A turn reachable from a cached `_Progress` is never mutated (a progress copies a turn
    before changing it), so its encoding, once made, stays true.
    """

    role: _Role
    sources: list[_Source] = field(default_factory=list)
    #: Assistant turns: the calls made, answered at the head of the next user turn.
    calls: list[ToolCall] = field(default_factory=list)
    encoded: bytes | None = None

    def copy(self) -> _Turn:
        return _Turn(self.role, list(self.sources), list(self.calls))


_LEADING = _Turn("user", [AnthropicTextBlock(text=LEADING_PLACEHOLDER)])
_TRAILING = _Turn("user", [AnthropicTextBlock(text=TRAILING_PLACEHOLDER)])


class _Turns(SlotsView[_Turn]):
    """A progress's turns to send, read through its view of the shared list, no copy."""

    __slots__ = ("lead",)

    def __init__(
        self, shared: list[_Turn], m: int, pinned: dict[int, _Turn], extra: list[_Turn]
    ) -> None:
        super().__init__(shared, m, pinned, extra)
        #: Whether the leading placeholder comes first (before the progress's turn 0).
        self.lead = self.at(0).role == "assistant"

    def __len__(self) -> int:
        return self.lead + super().__len__()

    def __getitem__(self, index: int) -> _Turn:
        if self.lead:
            if index == 0:
                return _LEADING
            index -= 1
        return self.at(index)

    def list(self) -> list[_Turn]:
        """Every turn, as a list."""
        return [self[index] for index in range(len(self))]


class _Progress(Progress):
    """The planned turns after a prefix of a log, for one request model (``tag``), on the
    shared walk (`nisse_llm.render._walk`); the turns are the shared ``slots``.

    Its view: the first ``n`` items and ``m`` turns, where ``pinned`` keeps its own
    version of each turn a longer log may replace (the last one and those with holes; a
    turn is copied before it changes, so a pinned turn never does). Re-sending a grown
    log costs the new events, not the whole history.
    """

    __slots__ = ("holes", "owned", "pinned", "reasoning")

    def __init__(self, shared: Shared, model: str) -> None:
        super().__init__(shared, model)
        #: Each unanswered call's hole: (turn index, block index).
        self.holes: dict[str, tuple[int, int]] = {}
        #: Replayable reasoning waiting for the assistant text or call it leads.
        self.reasoning: list[Reasoning] = []
        self.pinned: dict[int, _Turn] = {}
        #: Indexes of the turns made or copied while consuming, so may change in place.
        self.owned: set[int] = set()

    def copy(self) -> Self:
        other = super().copy()
        other.holes = dict(self.holes)
        other.reasoning = list(self.reasoning)
        other.pinned = {}
        other.owned = set()
        return other

    def rewind(self) -> None:
        super().rewind()
        for index, turn in self.pinned.items():
            self.shared.slots[index] = turn

    def _own(self, index: int) -> _Turn:
        turns: list[_Turn] = self.shared.slots
        if index not in self.owned:
            turns[index] = turns[index].copy()
            self.owned.add(index)
        return turns[index]

    def _open(self, turn: _Turn) -> _Turn:
        turns = self.shared.slots
        turns.append(turn)
        self.owned.add(len(turns) - 1)
        return turn

    def consume(self, items: list[object]) -> None:
        """Plan ``items`` after the view (this progress owns the tip: `extend`). The hot
        loop compares kinds as strings: isinstance on pydantic models runs ABC checks."""
        shared = self.shared
        turns = shared.slots
        at = self.n
        for event in bare_events(items):
            if (
                event.kind == "user_text"
                or event.kind == "tool_result"
                or event.kind == "user_image"
            ):
                self.reasoning = []  # reasoning that led no assistant content is left out
                if turns and turns[-1].calls:  # only assistant turns make calls
                    self._answer()
                if event.kind != "user_text" and (found := event_images(event, at)):
                    self.images += found
                    self.images_checked = False
                if event.kind == "tool_result":
                    self._fill(event)
                elif event.kind == "user_image" or event.text.strip():
                    if not turns or turns[-1].role != "user":
                        self._open(_Turn("user"))
                    self._own(len(turns) - 1).sources.append(event)
            elif event.kind == "reasoning":
                if (
                    event.model == self.tag
                    and replayable_thinking(event.block)
                    and (not turns or turns[-1].role != "assistant")
                ):
                    self.reasoning.append(event)
            elif event.kind == "assistant_text" or event.kind == "tool_call":
                if event.kind == "assistant_text" and not event.text.strip():
                    at += 1
                    continue
                if not turns or turns[-1].role != "assistant":
                    self._open(_Turn("assistant", [*self.reasoning]))
                    self.reasoning = []
                turn = self._own(len(turns) - 1)
                turn.sources.append(event)
                if event.kind == "tool_call":
                    if event.call_id in shared.call_ids:
                        raise RenderError(
                            f"corrupt log: two tool calls share the id {event.call_id!r}"
                        )
                    shared.call_ids[event.call_id] = at
                    shared.tools.setdefault(event.tool, at)
                    turn.calls.append(event)
            else:
                assert_never(event)
            at += 1
        shared.prefix.extend(items)
        self.n = len(shared.prefix)
        self.m = len(turns)
        self.owned = set()
        self.pinned = {index: turns[index] for index, _ in self.holes.values()}
        if turns:
            self.pinned[len(turns) - 1] = turns[-1]
        shared.tip = self.n

    def _answer(self) -> None:
        turns = self.shared.slots
        calls = turns[-1].calls
        index = len(turns)
        for slot, call in enumerate(calls):
            self.holes[call.call_id] = (index, slot)
        self._open(_Turn("user", list(calls)))

    def _fill(self, result: ToolResult) -> None:
        hole = self.holes.pop(result.call_id, None)
        if hole is None:
            if result.call_id in self.shared.call_ids:
                raise RenderError(f"corrupt log: two tool results answer {result.call_id!r}")
            raise RenderError(
                f"corrupt log: the tool result for {result.call_id!r} has no earlier tool call"
            )
        self._own(hole[0]).sources[hole[1]] = result

    def finish(self) -> _Turns:
        """The turns to send: open calls answered, placeholders where roles need them."""
        m = self.m
        if not m:
            raise RenderError("nothing to send: every event in the log is blank or left out")
        last = self.pinned[m - 1]
        extra: list[_Turn] = []
        if last.calls:
            extra.append(_Turn("user", list(last.calls)))
        if (extra[-1] if extra else last).role == "assistant":
            extra.append(_TRAILING)
        return _Turns(self.shared.slots, m, self.pinned, extra)

    def grow_rope(self, limit: int) -> Rope:
        """The rope, grown up to ``limit`` over turns that became final: a block past this
        call's first breakpoint would be of no use to it."""
        rope = self.rope
        final = min((hole[0] for hole in self.holes.values()), default=self.m - 1)
        final = min(final, self.m - 1, limit)
        if final > rope.covered:
            run = [_encode_turn(turn) for turn in self.shared.slots[rope.covered : final]]
            rope = self.rope = rope.extended(run, final)
        return rope


@dataclass(slots=True)
class _Plan:
    """A rendered log before encoding: its messages and its tool declarations."""

    turns: _Turns
    tools: list[AnthropicTool] | None
    stubbed: bool
    progress: _Progress


class AnthropicMessagesRenderer(Renderer):
    """Renders canonical logs for ``/v1/messages`` and parses its replies (pure)."""

    reply_parser = staticmethod(parse_message)
    route = ANTHROPIC_MESSAGES

    default_max_tokens = DEFAULT_MAX_OUTPUT_TOKENS

    @from_args
    def render_request(self, call: CallParams) -> AnthropicMessagesRequest:
        """The request body as its typed model."""
        events, tools, model, system = call.events, call.tools, call.model, call.system
        cache, options = call.cache, call.options
        rules = self.rules_for(call)
        with self._walks.lock:
            plan = _plan(self._walks, events, tools, model, rules.strict_messages_tools)
            turns = plan.turns.list()
        policy = active(cache, model)
        if policy is None:
            messages = [_map_turn(turn) for turn in turns]
        else:
            marks = _breakpoints(turns)
            messages = [
                _map_turn(turn, marks.get(index), _CONTROLS[policy.marker_ttl])
                for index, turn in enumerate(turns)
            ]
        return _envelope(model, system, rules, plan, messages, policy, options)

    def encode_parts(self, call: CallParams) -> list[bytes]:
        """The body of ``call`` in parts (`Renderer.render_parts`), under the walk cache's
        lock."""
        events, tools, model, system = call.events, call.tools, call.model, call.system
        max_tokens, cache, options, rules = call.max_tokens, call.cache, call.options, call.rules
        assert rules is not None, "the route decides a call's rules before it is encoded"
        plan = _plan(self._walks, events, tools, model, rules.strict_messages_tools)
        policy = active(cache, model)
        head, tail = _head_tail(
            self._envelopes, model, system, max_tokens, rules, plan, policy, options
        )
        turns = plan.turns
        control = None if policy is None else policy.control_json
        marks = {} if control is None else _breakpoints(turns)

        def encoded(index: int) -> bytes:
            slot = marks.get(index)
            if slot is None or control is None:
                return _encode_turn(turns[index])
            return _encode_marked_turn(turns[index], slot, control)

        # The leading placeholder sits before the progress's first turn; the last turn
        # always goes fresh, so the final part is never a bare block.
        offset = 1 if turns.lead else 0
        limit = min([len(turns) - 1, *marks]) - offset
        blocks, start = plan.progress.grow_rope(limit).usable(limit)
        opening = head[:-1] + b',"messages":[' + b"".join(encoded(i) + b"," for i in range(offset))
        rest = [encoded(index) for index in range(offset + start, len(turns))]
        rest[-1] += b"]}" if tail == b"{}" else b"]," + tail[1:]
        return [opening, *blocks, b",".join(rest)]


def _plan(
    walks: ProgressCache[_Progress],
    events: LogLike,
    tools: ToolsLike,
    model: str,
    strict: bool = False,
) -> _Plan:
    if not model:
        raise RenderError("cannot render a request without a model name")
    items = log_items(events)
    if not items:
        raise RenderError("cannot render an empty log: the API needs at least one message")
    progress = walks.walk(items, model, lambda shared: _Progress(shared, model))
    check_images_once(progress)
    turns = progress.finish()
    specs = unique_specs(tools)
    if specs:
        return _Plan(turns, _map_tools(specs, strict), False, progress)
    if called := progress.used_tools():
        return _Plan(turns, [stub_tool(name) for name in called], True, progress)
    return _Plan(turns, None, False, progress)


def _map_tools(specs: list[ToolSpec], strict: bool = False) -> list[AnthropicTool]:
    if not strict:
        return [_TOOLS.get(spec, map_tool) for spec in specs]
    return [_STRICT_TOOLS.get(spec, _strict_tool) for spec in specs]


def _strict_tool(spec: ToolSpec) -> AnthropicTool:
    """``spec``'s wire tool, ``strict: true`` when its schema fits strict mode (else as
    sent to a model without strict tools, and why at DEBUG)."""
    tool = map_tool(spec)
    if not spec.strict:
        return tool
    problem = strict_problem(spec.parameters, "anthropic")
    if problem is not None:
        logger.debug("tool %r is not sent strict to Claude: %s", spec.name, problem)
        return tool
    return tool.model_copy(update={"strict": True})


def _envelope(
    model: str,
    system: str | None,
    rules: CallRules,
    plan: _Plan,
    messages: list[AnthropicMessage],
    policy: PromptCache | None = None,
    options: RequestOptions | None = None,
) -> AnthropicMessagesRequest:
    fields = messages_fields(
        options,
        model=model,
        rules=rules,
        tools=() if plan.stubbed or not plan.tools else [tool.name for tool in plan.tools],
        stubbed=plan.stubbed,
        unthought_loop=_unthought_loop(plan.turns),
    )
    prompt: str | list[AnthropicTextBlock] | None = system if system and system.strip() else None
    tools = plan.tools
    if policy is not None:
        control = _CONTROLS[policy.marker_ttl]
        if prompt is not None:
            prompt = [AnthropicTextBlock(text=prompt, cache_control=control)]
        if tools:
            marked = _MARKED_TOOLS[policy.marker_ttl].get(
                tools[-1], lambda tool: tool.model_copy(update={"cache_control": control})
            )
            tools = [*tools[:-1], marked]
    return AnthropicMessagesRequest(
        model=model, system=prompt, messages=messages, tools=tools, **fields
    )


def _head_tail(
    envelopes: RecentMemo[tuple[bytes, bytes]],
    model: str,
    system: str | None,
    max_tokens: int | None,
    rules: CallRules,
    plan: _Plan,
    policy: PromptCache | None,
    options: RequestOptions | None,
) -> tuple[bytes, bytes]:
    """The body's encoded fields before ``messages`` and after it (as JSON objects)."""
    tools = tuple(plan.tools or ())
    # Stub tools are built per call, so they are known by name (all a stub depends on).
    names = tuple(tool.name for tool in tools) if plan.stubbed else ()
    ttl = "off" if policy is None else policy.marker_ttl
    unthought = options is not None and _unthought_loop(plan.turns)
    key = (model, system, max_tokens, options, ttl, plan.stubbed, names, unthought)

    def encode() -> tuple[bytes, bytes]:
        envelope = _envelope(model, system, rules, plan, [], policy, options)
        serializer = AnthropicMessagesRequest.__pydantic_serializer__
        try:
            head = serializer.to_json(
                envelope, include={"model", "max_tokens", "system"}, exclude_none=True
            )
            tail = serializer.to_json(
                envelope, exclude={"model", "max_tokens", "system", "messages"}, exclude_none=True
            )
        except ValueError as exc:
            raise unencodable(exc) from exc
        return head, tail

    return envelopes.get(key, () if plan.stubbed else tools, encode)


def _unthought_loop(turns: Indexed[_Turn]) -> bool:
    """Whether the request continues a tool loop whose last assistant turn does not start
    with a thinking block: Anthropic refuses that turn with thinking on ("a final assistant
    message must start with a thinking block")."""
    for index in range(len(turns) - 1, -1, -1):
        turn = turns[index]
        if turn.role == "assistant":
            return bool(turn.calls) and not isinstance(turn.sources[0], Reasoning)
    return False


def _map_turn(
    turn: _Turn, mark: int | None = None, control: AnthropicCacheControl | None = None
) -> AnthropicMessage:
    blocks = [_map_source(s, turn.role) for s in turn.sources]
    if mark is not None:
        blocks[mark] = blocks[mark].model_copy(update={"cache_control": control})
    return AnthropicMessage(role=turn.role, content=blocks)


def _breakpoints(turns: Indexed[_Turn]) -> dict[int, int]:
    """Message breakpoints, turn index -> block index: the log's last markable block, and
    the last one before the assistant turn that leads to it (what the previous request
    marked last, so it is read back exactly, however many blocks the turn added)."""
    latest = _last_markable(turns, len(turns) - 1)
    if latest is None:
        return {}
    marks = dict([latest])
    start = latest[0]
    while start >= 0 and turns[start].role != "assistant":
        start -= 1
    previous = _last_markable(turns, start - 1) if start > 0 else None
    if previous is not None:
        marks[previous[0]] = previous[1]
    return marks


def _last_markable(turns: Indexed[_Turn], start: int) -> tuple[int, int] | None:
    # The trailing placeholder is replaced by whatever the log says next, so a breakpoint
    # there would never be read back.
    for index in range(start, -1, -1):
        turn = turns[index]
        if turn is _TRAILING:
            continue
        for slot in range(len(turn.sources) - 1, -1, -1):
            if _markable(turn.sources[slot]):
                return index, slot
    return None


def _markable(source: _Source) -> bool:
    # "Thinking blocks cannot be explicitly marked with cache_control"; a result sent
    # without content is an empty block.
    if type(source) is Reasoning:
        return False
    if type(source) is ToolResult:
        return source.is_error or bool(source.output.strip()) or bool(source.images)
    return True


def _map_source(source: _Source, role: _Role) -> AnthropicRequestBlock:
    if isinstance(source, AnthropicTextBlock):
        return source
    if role == "user" and isinstance(source, ToolCall):
        return interrupted(source)
    return _map_event(source)


def _map_event(event: WireEvent) -> AnthropicRequestBlock:
    if isinstance(event, UserText | AssistantText):
        return AnthropicTextBlock(text=event.text)
    if isinstance(event, UserImage):
        return anthropic_image(event.image)
    if isinstance(event, ToolCall):
        return AnthropicToolUseBlock(id=event.call_id, name=event.tool, input=event.arguments)
    if isinstance(event, ToolResult):
        return map_result(event)
    if isinstance(event, Reasoning):
        if event.block.get("type") == "thinking":
            return AnthropicThinkingBlock.model_validate(event.block)
        return AnthropicRedactedThinkingBlock.model_validate(event.block)
    assert_never(event)


def _encode_event(event: WireEvent) -> bytes:
    """An event's block, spelled out around pydantic-core's encoding of each value in the
    wire models' field order (building the model first costs 2-3x more); tests hold it
    byte-identical to the model's dump."""
    try:
        if event.kind == "user_text" or event.kind == "assistant_text":
            return b'{"type":"text","text":' + to_json(event.text) + b"}"
        if event.kind == "tool_call":
            return (
                b'{"type":"tool_use","id":'
                + to_json(event.call_id)
                + b',"name":'
                + to_json(event.tool)
                + b',"input":'
                # The wire model's default: inf and nan go out as null.
                + to_json(event.arguments, inf_nan_mode="null")
                + b"}"
            )
        if event.kind == "user_image":
            return anthropic_image_json(event.image)
        if event.kind == "tool_result" and event.images:
            return encode_result_with_images(event)
        if event.kind == "tool_result":
            content = b""
            if event.output.strip():
                content = b',"content":' + to_json(event.output)
            elif event.is_error:
                content = EMPTY_ERROR_CONTENT
            flag = b',"is_error":true}' if event.is_error else b',"is_error":false}'
            return b'{"type":"tool_result","tool_use_id":' + to_json(event.call_id) + content + flag
    except ValueError as exc:
        raise unencodable(exc) from exc
    return encode_model(_map_event(event))


def _encode_interrupted(call: ToolCall) -> bytes:
    return encode_model(interrupted(call))


def _encode_turn(turn: _Turn) -> bytes:
    """A message's bytes, from memoised block fragments; kept on the (unchanging) turn."""
    if turn.encoded is not None:
        return turn.encoded
    turn.encoded = _MESSAGE_OPEN[turn.role] + b",".join(_fragments(turn)) + b"]}"
    return turn.encoded


def _encode_marked_turn(turn: _Turn, slot: int, control: bytes) -> bytes:
    """A message with a breakpoint on one block: ``cache_control`` is every block's last field."""
    fragments = _fragments(turn)
    fragments[slot] = fragments[slot][:-1] + b',"cache_control":' + control + b"}"
    return _MESSAGE_OPEN[turn.role] + b",".join(fragments) + b"]}"


def _fragments(turn: _Turn) -> list[bytes]:
    fragments: list[bytes] = []
    for source in turn.sources:
        if type(source) is AnthropicTextBlock:
            fragments.append(encode_model(source))
        elif turn.role == "user" and type(source) is ToolCall:
            fragments.append(_INTERRUPTED.get(source, _encode_interrupted))
        else:
            fragments.append(_FRAGMENTS.get(cast(WireEvent, source), _encode_event))
    return fragments
