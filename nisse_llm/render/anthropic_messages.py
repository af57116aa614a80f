"""The Anthropic messages route: canonical log -> request body, response body -> canonical events.

Render rules (each answers something the API rejects):

- ``system`` goes top level (left out when blank); ``max_tokens`` is always sent.
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
  name are a `RenderError`; a schema without ``type`` gets ``"type": "object"``.
- An empty log, or one with nothing left to send, is a `RenderError`.

`render_bytes` is byte-identical to ``render_request(...).model_dump_json(exclude_none=True)``
(UTF-8): each event's block is encoded once, memoised per event, and the body is joined
from bytes, so re-sending a growing log does not re-encode its history.

Parse rules: provider ids are dropped and calls get minted ids; ``max_tokens`` and
``model_context_window_exceeded`` raise `TruncatedResponse`, ``refusal`` raises
`ModelRefusal`; block types the SDK never asks for (server tools and their results) and
``pause_turn`` (only server tools pause) raise `LLMError` naming them, as does a call
whose input is not an object; any malformed body raises `LLMError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, assert_never, cast

from pydantic import BaseModel, ValidationError

from nisse_llm.canonical import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    AssistantText,
    CanonicalEvent,
    Completion,
    LogLike,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolLike,
    ToolResult,
    ToolSpec,
    Usage,
    UserText,
    as_tool_specs,
    mint_call_id,
)
from nisse_llm.errors import LLMError, ModelRefusal, RenderError, TruncatedResponse
from nisse_llm.render._memo import FragmentMemo
from nisse_llm.wire.anthropic_messages import (
    AnthropicMessage,
    AnthropicMessagesRequest,
    AnthropicMessagesResponse,
    AnthropicRedactedThinkingBlock,
    AnthropicRequestBlock,
    AnthropicResponseOtherBlock,
    AnthropicResponseRedactedThinkingBlock,
    AnthropicResponseTextBlock,
    AnthropicResponseThinkingBlock,
    AnthropicResponseToolUseBlock,
    AnthropicTextBlock,
    AnthropicThinkingBlock,
    AnthropicTool,
    AnthropicToolChoiceNone,
    AnthropicToolResultBlock,
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
INTERRUPTED_RESULT = (
    "Interrupted: this tool call never returned a result (the run was interrupted), "
    "so its outcome is unknown."
)
EMPTY_ERROR_OUTPUT = "(The tool failed without output.)"
STUB_TOOL_DESCRIPTION = (
    "Not offered in this request; declared only because earlier turns called it."
)

_EVENT_TYPES = frozenset({UserText, AssistantText, ToolCall, ToolResult, Reasoning})
_TRUNCATION_STOPS = frozenset({"max_tokens", "model_context_window_exceeded"})
_SNIPPET = 300

#: Each event's encoded block, computed once per event object (events are frozen).
_FRAGMENTS: FragmentMemo[CanonicalEvent, bytes] = FragmentMemo()
#: Each tool spec's wire tool, built (and its schema validated) once per spec object.
_TOOLS: FragmentMemo[ToolSpec, AnthropicTool] = FragmentMemo()

_Synthetic: TypeAlias = AnthropicTextBlock | AnthropicToolResultBlock
_Source: TypeAlias = UserText | AssistantText | ToolCall | ToolResult | Reasoning | _Synthetic
_Role: TypeAlias = Literal["user", "assistant"]


@dataclass(slots=True)
class _Turn:
    """One message being planned: its role, its block sources, the calls it makes."""

    role: _Role
    sources: list[_Source] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    #: Assistant turns: whether a text or call is present (reasoning may only lead).
    visible: bool = False


@dataclass(slots=True)
class _Plan:
    """A rendered log before encoding: its messages and its tool declarations."""

    turns: list[_Turn]
    tools: list[AnthropicTool] | None
    stubbed: bool


class AnthropicMessagesRenderer:
    """Renders canonical logs for ``/v1/messages`` and parses its replies (pure)."""

    def render(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> dict[str, Any]:
        """The request body as a JSON-ready dict (the seeds' call shape)."""
        request = self.render_request(events, tools, model, system, max_tokens=max_tokens)
        return request.model_dump(mode="json", exclude_none=True)

    def render_request(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> AnthropicMessagesRequest:
        """The request body as its typed model."""
        plan = _plan(events, tools, model)
        messages = [
            AnthropicMessage(role=turn.role, content=[_map_source(s) for s in turn.sources])
            for turn in plan.turns
        ]
        return _envelope(model, system, max_tokens, plan, messages)

    def render_bytes(
        self,
        events: LogLike,
        tools: Iterable[ToolLike] | None,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> bytes:
        """The encoded body, equal to ``render_request(...).model_dump_json(exclude_none=True)``."""
        plan = _plan(events, tools, model)
        envelope = _envelope(model, system, max_tokens, plan, [])
        serializer = AnthropicMessagesRequest.__pydantic_serializer__
        head = serializer.to_json(
            envelope, include={"model", "max_tokens", "system"}, exclude_none=True
        )
        tail = serializer.to_json(
            envelope, exclude={"model", "max_tokens", "system", "messages"}, exclude_none=True
        )
        body = b",".join(
            _MESSAGE_OPEN[turn.role] + b",".join(map(_fragment, turn.sources)) + b"]}"
            for turn in plan.turns
        )
        closing = b"]}" if tail == b"{}" else b"]," + tail[1:]
        return head[:-1] + b',"messages":[' + body + closing

    def parse(
        self,
        body: bytes | str | Mapping[str, Any],
        *,
        requested_model: str,
        max_tokens: int | None = None,
    ) -> Completion:
        """Canonical events, usage and stop reason of a 200 reply; `LLMError` if it is not one."""
        response = _validate(body)
        if response.type is not None and response.type != "message":
            raise LLMError(f"messages response has type {response.type!r}, not 'message'")
        produced_by = response.model or requested_model
        stop = response.stop_reason
        if stop == "refusal":
            raise _refusal(response, requested_model)
        if stop in _TRUNCATION_STOPS:
            raise TruncatedResponse(_truncation_message(stop, requested_model, max_tokens))
        if response.content is None:
            raise LLMError("malformed messages response: no content list")
        events: list[CanonicalEvent] = []
        for block in response.content:
            event = _map_response_block(block, requested_model, response.model, produced_by)
            if event is not None:
                events.append(event)
        if stop == "pause_turn":
            raise LLMError(
                "messages response stopped with pause_turn (a paused server-tool turn); "
                "nisse_llm declares no server tools and cannot resume it"
            )
        return Completion(
            events=events,
            usage=_map_usage(response),
            stop_reason=stop,
            response_model=response.model,
        )


_MESSAGE_OPEN: dict[_Role, bytes] = {
    "user": b'{"role":"user","content":[',
    "assistant": b'{"role":"assistant","content":[',
}


def _plan(events: LogLike, tools: Iterable[ToolLike] | None, model: str) -> _Plan:
    if not model:
        raise RenderError("cannot render a request without a model name")
    log, results = _index(events)
    if not log:
        raise RenderError("cannot render an empty log: the API needs at least one message")
    turns: list[_Turn] = []
    last: _Turn | None = None  # always turns[-1]
    called: dict[str, None] = {}
    # The hot loop of every call, kept flat: kinds are compared as strings, since
    # isinstance on pydantic models goes through ABC checks (about 3x slower).
    for event in log:
        if event.kind == "user_text" or event.kind == "tool_result":
            if last is not None and last.calls:  # only assistant turns make calls
                last = _answers(last, results)
                turns.append(last)
            if event.kind == "user_text" and event.text.strip():
                if last is None or last.role != "user":
                    last = _Turn("user")
                    turns.append(last)
                last.sources.append(event)
            continue
        if event.kind == "reasoning" and (event.model != model or not _replayable(event.block)):
            continue
        if event.kind == "assistant_text" and not event.text.strip():
            continue
        if last is None or last.role != "assistant":
            last = _Turn("assistant")
            turns.append(last)
        if event.kind == "reasoning":
            if not last.visible:
                last.sources.append(event)
        elif event.kind == "assistant_text":
            last.sources.append(event)
            last.visible = True
        elif event.kind == "tool_call":
            last.sources.append(event)
            last.calls.append(event)
            last.visible = True
            called[event.tool] = None
        else:
            assert_never(event)
    if last is not None and last.calls:
        turns.append(_answers(last, results))
    turns = _drop_reasoning_only(turns)
    if not turns:
        raise RenderError("nothing to send: every event in the log is blank or left out")
    if turns[0].role == "assistant":
        turns.insert(0, _Turn("user", [AnthropicTextBlock(text=LEADING_PLACEHOLDER)]))
    if turns[-1].role == "assistant":
        turns.append(_Turn("user", [AnthropicTextBlock(text=TRAILING_PLACEHOLDER)]))
    specs = as_tool_specs(tools)
    if specs:
        return _Plan(turns, _map_tools(specs), stubbed=False)
    if called:
        return _Plan(turns, [_stub_tool(name) for name in called], stubbed=True)
    return _Plan(turns, None, stubbed=False)


def _index(events: LogLike) -> tuple[list[CanonicalEvent], dict[str, ToolResult]]:
    """The bare events, and each call's result, checking that every result follows its call."""
    log: list[CanonicalEvent] = []
    calls: set[str] = set()
    results: dict[str, ToolResult] = {}
    for item in events:
        cls = type(item)
        # isinstance on a pydantic model that fails runs ABC checks: test the exact types first.
        stored = cls is StoredEvent or (cls not in _EVENT_TYPES and isinstance(item, StoredEvent))
        event = cast(StoredEvent, item).event if stored else cast(CanonicalEvent, item)
        log.append(event)
        if event.kind == "tool_call":
            if event.call_id in calls:
                raise RenderError(f"corrupt log: two tool calls share the id {event.call_id!r}")
            calls.add(event.call_id)
        elif event.kind == "tool_result":
            if event.call_id not in calls:
                raise RenderError(
                    f"corrupt log: the tool result for {event.call_id!r} has no earlier tool call"
                )
            if event.call_id in results:
                raise RenderError(f"corrupt log: two tool results answer {event.call_id!r}")
            results[event.call_id] = event
    return log, results


def _answers(turn: _Turn, results: dict[str, ToolResult]) -> _Turn:
    """The user turn after an assistant turn that made calls: their results, in call order."""
    answers: list[_Source] = []
    for call in turn.calls:
        result = results.get(call.call_id)
        answers.append(result if result is not None else _interrupted(call))
    return _Turn("user", answers)


def _drop_reasoning_only(turns: list[_Turn]) -> list[_Turn]:
    """Remove assistant turns holding only reasoning, merging the user turns around them."""
    if all(turn.visible or turn.role == "user" for turn in turns):
        return turns
    kept: list[_Turn] = []
    for turn in turns:
        if turn.role == "assistant" and not turn.visible:
            continue
        if kept and kept[-1].role == turn.role:
            # Only user turns meet here, and the later one holds text only (its assistant
            # turn made no calls), so results stay first.
            kept[-1].sources.extend(turn.sources)
        else:
            kept.append(turn)
    return kept


def _replayable(block: Mapping[str, Any]) -> bool:
    """Whether a stored block can go back exactly as stored (no unknown or ill-typed keys)."""
    kind = block.get("type")
    if kind == "thinking":
        return (
            block.keys() == {"type", "thinking", "signature"}
            and isinstance(block["thinking"], str)
            and isinstance(block["signature"], str)
        )
    if kind == "redacted_thinking":
        return block.keys() == {"type", "data"} and isinstance(block["data"], str)
    return False


def _interrupted(call: ToolCall) -> AnthropicToolResultBlock:
    return AnthropicToolResultBlock(
        tool_use_id=call.call_id, content=INTERRUPTED_RESULT, is_error=True
    )


def _map_tools(specs: list[ToolSpec]) -> list[AnthropicTool]:
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise RenderError(f"two tools are named {spec.name!r}; the API needs unique names")
        seen.add(spec.name)
    return [_TOOLS.get(spec, _map_tool) for spec in specs]


def _map_tool(spec: ToolSpec) -> AnthropicTool:
    schema = spec.parameters if "type" in spec.parameters else {"type": "object", **spec.parameters}
    return AnthropicTool(name=spec.name, description=spec.description or None, input_schema=schema)


def _stub_tool(name: str) -> AnthropicTool:
    return AnthropicTool(
        name=name, description=STUB_TOOL_DESCRIPTION, input_schema={"type": "object"}
    )


def _envelope(
    model: str,
    system: str | None,
    max_tokens: int | None,
    plan: _Plan,
    messages: list[AnthropicMessage],
) -> AnthropicMessagesRequest:
    ceiling = DEFAULT_MAX_OUTPUT_TOKENS if max_tokens is None else max_tokens
    if ceiling < 1:
        raise RenderError(f"max_tokens must be a positive number, not {ceiling}")
    return AnthropicMessagesRequest(
        model=model,
        max_tokens=ceiling,
        system=system if system and system.strip() else None,
        messages=messages,
        tools=plan.tools,
        tool_choice=AnthropicToolChoiceNone() if plan.stubbed else None,
    )


def _map_source(source: _Source) -> AnthropicRequestBlock:
    if isinstance(source, AnthropicTextBlock | AnthropicToolResultBlock):
        return source
    return _map_event(source)


def _map_event(event: CanonicalEvent) -> AnthropicRequestBlock:
    if isinstance(event, UserText | AssistantText):
        return AnthropicTextBlock(text=event.text)
    if isinstance(event, ToolCall):
        return AnthropicToolUseBlock(id=event.call_id, name=event.tool, input=event.arguments)
    if isinstance(event, ToolResult):
        return _map_result(event)
    if isinstance(event, Reasoning):
        if event.block.get("type") == "thinking":
            return AnthropicThinkingBlock.model_validate(event.block)
        return AnthropicRedactedThinkingBlock.model_validate(event.block)
    assert_never(event)


def _map_result(result: ToolResult) -> AnthropicToolResultBlock:
    content: str | None = result.output
    if not result.output.strip():
        content = EMPTY_ERROR_OUTPUT if result.is_error else None
    return AnthropicToolResultBlock(
        tool_use_id=result.call_id, content=content, is_error=result.is_error
    )


def _encode(block: BaseModel) -> bytes:
    return block.__pydantic_serializer__.to_json(block, exclude_none=True)


def _encode_event(event: CanonicalEvent) -> bytes:
    return _encode(_map_event(event))


def _fragment(source: _Source) -> bytes:
    if type(source) in _EVENT_TYPES:
        return _FRAGMENTS.get(cast(CanonicalEvent, source), _encode_event)
    return _encode(cast(_Synthetic, source))


def _validate(body: bytes | str | Mapping[str, Any]) -> AnthropicMessagesResponse:
    try:
        if isinstance(body, bytes | str):
            return AnthropicMessagesResponse.model_validate_json(body)
        return AnthropicMessagesResponse.model_validate(body)
    except (ValidationError, ValueError) as exc:
        raise LLMError(f"malformed messages response: {_first_problem(exc)}") from exc


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)
        if errors:
            where = ".".join(str(part) for part in errors[0]["loc"]) or "body"
            return f"{where}: {errors[0]['msg']} ({exc.error_count()} problem(s))"
    return str(exc)[:_SNIPPET]


def _map_response_block(
    block: Any, requested_model: str, response_model: str | None, produced_by: str
) -> CanonicalEvent | None:
    if isinstance(block, AnthropicResponseTextBlock):
        return AssistantText(text=block.text, model=produced_by) if block.text else None
    if isinstance(block, AnthropicResponseToolUseBlock):
        return _map_tool_use(block)
    if isinstance(block, AnthropicResponseThinkingBlock | AnthropicResponseRedactedThinkingBlock):
        return Reasoning(
            model=requested_model,
            response_model=response_model,
            block=block.model_dump(exclude_unset=True),
        )
    if isinstance(block, AnthropicResponseOtherBlock):
        raise LLMError(
            f"messages response holds a {block.type!r} block, which nisse_llm never asks for "
            "(it declares client tools only)"
        )
    raise LLMError(f"messages response holds an unreadable block: {type(block).__name__}")


def _map_tool_use(block: AnthropicResponseToolUseBlock) -> ToolCall:
    if not isinstance(block.input, dict):
        raise LLMError(
            f"the model called {block.name!r} with input that is not a JSON object: "
            f"{str(block.input)[:_SNIPPET]}"
        )
    try:
        # Provider ids are dropped at the boundary; the log owns identity (spec A10).
        return ToolCall(call_id=mint_call_id(), tool=block.name, arguments=block.input)
    except ValidationError as exc:
        raise LLMError(f"the model called an invalid tool name {block.name[:80]!r}") from exc


def _map_usage(response: AnthropicMessagesResponse) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    return Usage(
        input=(usage.input_tokens or 0) + cache_read + cache_write,
        output=usage.output_tokens or 0,
        cache_read=cache_read,
        cache_write=cache_write,
    )


def _refusal(response: AnthropicMessagesResponse, requested_model: str) -> ModelRefusal:
    said = " ".join(
        block.text
        for block in response.content or ()
        if isinstance(block, AnthropicResponseTextBlock) and block.text
    )
    details = (response.model_extra or {}).get("stop_details")
    explanation = details.get("explanation") if isinstance(details, dict) else None
    message = f"{requested_model} refused to answer (stop_reason refusal)"
    if isinstance(explanation, str) and explanation:
        message += f": {explanation[:_SNIPPET]}"
    if said:
        message += f"; it said: {said[:_SNIPPET]!r}"
    return ModelRefusal(message, error_type="refusal")


def _truncation_message(stop: str, model: str, max_tokens: int | None) -> str:
    if stop == "model_context_window_exceeded":
        return (
            f"{model} ran out of context window mid-answer (stop_reason {stop}); "
            "shorten the log before retrying"
        )
    ceiling = f"the output ceiling of {max_tokens} tokens" if max_tokens else "its output ceiling"
    return f"{model} hit {ceiling} mid-answer (stop_reason {stop}); raise llm.max_output_tokens"
