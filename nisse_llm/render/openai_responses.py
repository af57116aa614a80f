"""Canonical log <-> OpenAI Responses bodies (``POST {base}/v1/responses``), statelessly.

Every request carries the whole log as ``input`` items with ``store: false``, never
``previous_response_id``, and asks models that reason for
``include: ["reasoning.encrypted_content"]`` so their reasoning can be carried to the next
turn. Render rules, in the order a body is built:

- The system prompt, when not blank, is ``instructions``.
- `UserText` is a user message (a `Compaction` goes as its user-side context, as on the
  other routes); `UserImage` a user message with one ``input_image`` part
  (a ``data:`` URL for bytes). Images over a provider limit are an `ImageError`.
- A turn is a run of `AssistantText`/`ToolCall`/`Reasoning` events ended by a `UserText`,
  `UserImage` or `ToolResult`. Its items go in log order: each non-blank text an assistant
  message, each call a ``function_call`` (the log's id as ``call_id``, arguments as a JSON
  string), each replayable reasoning item as it was received. Right after the turn, each
  call is answered in call order by a ``function_call_output``: its result is moved up from
  wherever it sits in the log (user text that arrived while tools ran follows the outputs).
- A `Reasoning` event is replayed only when its block is a Responses reasoning item
  (``type: "reasoning"`` with an ``id``) and the request names the model that produced
  it; the block goes back byte for byte (key order kept). Any other reasoning (another
  model's, or another route's thinking) is left out (spec A10), and so is the reasoning of
  a turn that has nothing else to send (the API refuses a reasoning item not followed by
  the item it led to).
- A call with no result gets the synthetic `INTERRUPTED_RESULT`. A result with no earlier
  call, a second result for one call, or a call id used twice is a corrupt log: `RenderError`.
- A failed tool run's output starts with `TOOL_ERROR_PREFIX` (the route has no error
  flag). A result with images sends its output as a list: the text (if any) as
  ``input_text``, then each image as ``input_image``.
- Blank text is left out; a log with nothing left to send is a `RenderError`.
- Tools passed are function tools with ``strict: false`` (two with one name are a
  `RenderError`; a schema without ``type`` gets ``"type": "object"``). With none passed but
  calls in the log, each tool name the log used is declared as a stub and ``tool_choice``
  is ``"none"``.
- `RequestOptions` map to their fields by `nisse_llm.render._options.responses_fields`
  (``reasoning: {effort, summary: "auto"}``, ``max_output_tokens``, sampling where the
  model's rules allow it, ``stop`` refused). ``prompt_cache_key`` goes to OpenAI models
  only: the one given, else one made from the model, the system prompt and the log's first
  event, so every turn of a task sends the same key and hits the same cache.

The reply side (parsing) lives in `nisse_llm.render.openai_responses_reply`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pydantic_core
from pydantic import BaseModel

from nisse_llm.errors import RenderError
from nisse_llm.log.canonical import (
    AssistantText,
    Compaction,
    Completion,
    LogLike,
    Reasoning,
    StoredEvent,
    ToolCall,
    ToolResult,
    ToolsLike,
    ToolSpec,
    UserImage,
    UserText,
    WireEvent,
    as_tool_specs,
    log_items,
    wire_events,
)
from nisse_llm.render._cache import PromptCache
from nisse_llm.render._images import check_log_images
from nisse_llm.render._memo import FragmentMemo
from nisse_llm.render._options import responses_fields
from nisse_llm.render._wording import INTERRUPTED_TEXT, STUB_TOOL_DESCRIPTION, TOOL_ERROR_PREFIX
from nisse_llm.render.openai_responses_reply import parse_responses_reply

if TYPE_CHECKING:
    from nisse_llm.config.options import RequestOptions
    from nisse_llm.wire.openai_responses import (
        OpenAIResponsesFunctionTool,
        OpenAIResponsesInputItem,
        OpenAIResponsesInputPart,
        OpenAIResponsesRequest,
    )

__all__ = [
    "INTERRUPTED_RESULT",
    "TOOL_ERROR_PREFIX",
    "OpenAIResponsesRenderer",
    "replayable_reasoning",
]

#: The output of the synthetic result that answers a call the log never answered.
INTERRUPTED_RESULT = TOOL_ERROR_PREFIX + INTERRUPTED_TEXT

_NOTHING_TO_SEND = "the log has nothing to send: no non-blank text, image or tool call"
_STUB_PARAMETERS: dict[str, Any] = {"type": "object"}


def replayable_reasoning(block: Mapping[str, Any]) -> bool:
    """Whether a `Reasoning` block is a Responses reasoning item (what this route replays)."""
    return block.get("type") == "reasoning" and isinstance(block.get("id"), str)


def _check_pairs(events: list[WireEvent]) -> tuple[dict[str, ToolResult], list[str]]:
    """Each call's result by call id, and the tool names the log's calls use (in order);
    a corrupt pairing is a `RenderError`."""
    results: dict[str, ToolResult] = {}
    call_ids: set[str] = set()
    used: dict[str, None] = {}
    for event in events:
        if isinstance(event, ToolCall):
            if event.call_id in call_ids:
                raise RenderError(f"tool call id {event.call_id!r} is used twice in the log")
            call_ids.add(event.call_id)
            used.setdefault(event.tool, None)
        elif isinstance(event, ToolResult):
            if event.call_id not in call_ids:
                raise RenderError(
                    f"tool result for {event.call_id!r} has no earlier tool call in the log"
                )
            if event.call_id in results:
                raise RenderError(f"tool call {event.call_id!r} has two results in the log")
            results[event.call_id] = event
    return results, list(used)


def _image_part(image: Any, *, detail: bool) -> OpenAIResponsesInputPart:
    from nisse_llm.wire.openai_responses import OpenAIResponsesInputImage

    return OpenAIResponsesInputImage(image_url=image.data_url, detail="auto" if detail else None)


def _output_item(call: ToolCall, result: ToolResult | None) -> OpenAIResponsesInputItem:
    from nisse_llm.wire.openai_responses import (
        OpenAIResponsesFunctionCallOutput,
        OpenAIResponsesInputText,
    )

    if result is None:
        return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=INTERRUPTED_RESULT)
    text = TOOL_ERROR_PREFIX + result.output if result.is_error else result.output
    if not result.images:
        return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=text)
    parts: list[OpenAIResponsesInputPart] = []
    if text:
        parts.append(OpenAIResponsesInputText(text=text))
    parts.extend(_image_part(image, detail=False) for image in result.images)
    return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=parts)


class _Typed:
    """Makes each input item as its wire model (the typed request)."""

    @staticmethod
    def assistant(event: AssistantText) -> OpenAIResponsesInputItem:
        from nisse_llm.wire.openai_responses import OpenAIResponsesAssistantMessage

        return OpenAIResponsesAssistantMessage(content=event.text)

    @staticmethod
    def call(event: ToolCall) -> OpenAIResponsesInputItem:
        from nisse_llm.wire.openai_responses import OpenAIResponsesFunctionCall

        return OpenAIResponsesFunctionCall(
            call_id=event.call_id, name=event.tool, arguments=_arguments(event)
        )

    @staticmethod
    def reasoning(event: Reasoning) -> OpenAIResponsesInputItem:
        return event.block

    @staticmethod
    def user(event: UserText) -> OpenAIResponsesInputItem:
        from nisse_llm.wire.openai_responses import OpenAIResponsesInputMessage

        return OpenAIResponsesInputMessage(content=event.text)

    @staticmethod
    def image(event: UserImage) -> OpenAIResponsesInputItem:
        from nisse_llm.wire.openai_responses import OpenAIResponsesInputMessage

        return OpenAIResponsesInputMessage(content=[_image_part(event.image, detail=True)])

    @staticmethod
    def output(call: ToolCall, result: ToolResult | None) -> OpenAIResponsesInputItem:
        return _output_item(call, result)


#: One memo for the route: event -> its encoded input item (see `_Encoded`).
_MEMO: FragmentMemo[Any, bytes] = FragmentMemo()
#: A call the log never answered -> its synthetic output, encoded.
_INTERRUPTED: FragmentMemo[ToolCall, bytes] = FragmentMemo()


class _Encoded:
    """Makes each input item as its encoded bytes, once per event (events never change):
    the typed item's dump, so the joined body is the typed request's dump."""

    @staticmethod
    def assistant(event: AssistantText) -> bytes:
        return _MEMO.get(event, lambda e: _encode(_Typed.assistant(e)))

    @staticmethod
    def call(event: ToolCall) -> bytes:
        return _MEMO.get(event, lambda e: _encode(_Typed.call(e)))

    @staticmethod
    def reasoning(event: Reasoning) -> bytes:
        return _MEMO.get(event, lambda e: _json(e.block))

    @staticmethod
    def user(event: UserText) -> bytes:
        return _MEMO.get(event, lambda e: _encode(_Typed.user(e)))

    @staticmethod
    def image(event: UserImage) -> bytes:
        return _MEMO.get(event, lambda e: _encode(_Typed.image(e)))

    @staticmethod
    def output(call: ToolCall, result: ToolResult | None) -> bytes:
        if result is None:
            return _INTERRUPTED.get(call, lambda c: _encode(_output_item(c, None)))
        return _MEMO.get(result, lambda r: _encode(_output_item(call, r)))


def _walk(events: list[WireEvent], model: str, make: Any) -> tuple[list[Any], list[str]]:
    """The input items in order (as ``make`` makes them: typed or encoded), and the tool
    names the log's calls use (module docstring: the order and the replay rule)."""
    results, used = _check_pairs(events)
    items: list[Any] = []
    turn: list[Any] = []
    calls: list[ToolCall] = []
    said = False  # the open turn has a text or a call (so its reasoning may go)

    def close_turn() -> None:
        nonlocal said
        if said:
            items.extend(turn)
            items.extend(make.output(call, results.get(call.call_id)) for call in calls)
        turn.clear()
        calls.clear()
        said = False

    for event in events:
        if type(event) is AssistantText:
            if event.text.strip():
                turn.append(make.assistant(event))
                said = True
        elif type(event) is ToolCall:
            turn.append(make.call(event))
            calls.append(event)
            said = True
        elif type(event) is Reasoning:
            if event.model == model and replayable_reasoning(event.block):
                turn.append(make.reasoning(event))
        elif type(event) is UserText:
            close_turn()
            if event.text.strip():
                items.append(make.user(event))
        elif type(event) is UserImage:
            close_turn()
            items.append(make.image(event))
        elif type(event) is ToolResult:
            close_turn()
    close_turn()
    if not items:
        raise RenderError(_NOTHING_TO_SEND)
    return items, used


def _plan(events: list[WireEvent], model: str) -> tuple[list[OpenAIResponsesInputItem], list[str]]:
    """The typed input items, in order, and the tool names the log's calls use."""
    return _walk(events, model, _Typed)


def _json(value: object) -> bytes:
    try:
        return pydantic_core.to_json(value)
    except ValueError as exc:
        raise RenderError(f"the log holds a value that cannot be encoded as JSON: {exc}") from exc


def _encode(item: Any) -> bytes:
    """An input item (a wire model, or a reasoning item's dict) as JSON bytes, by the
    route's dump convention (``exclude_none`` on models; a dict goes as it is)."""
    if not isinstance(item, BaseModel):
        return _json(item)
    try:
        return item.__pydantic_serializer__.to_json(item, exclude_none=True)
    except ValueError as exc:
        raise RenderError(f"the log holds a value that cannot be encoded as JSON: {exc}") from exc


def _arguments(call: ToolCall) -> str:
    try:
        return pydantic_core.to_json(call.arguments).decode()
    except ValueError as exc:
        raise RenderError(f"the log holds a value that cannot be encoded as JSON: {exc}") from exc


def _tool_specs(tools: ToolsLike) -> list[ToolSpec]:
    specs = as_tool_specs(tools)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise RenderError(f"two tools are named {twice!r}; the API needs unique names")
    return specs


def _map_tool(spec: ToolSpec) -> OpenAIResponsesFunctionTool:
    from nisse_llm.wire.openai_responses import OpenAIResponsesFunctionTool

    schema = spec.parameters if "type" in spec.parameters else {"type": "object", **spec.parameters}
    return OpenAIResponsesFunctionTool(
        name=spec.name, description=spec.description or None, parameters=schema
    )


def _map_stub_tool(name: str) -> OpenAIResponsesFunctionTool:
    from nisse_llm.wire.openai_responses import OpenAIResponsesFunctionTool

    return OpenAIResponsesFunctionTool(
        name=name, description=STUB_TOOL_DESCRIPTION, parameters=_STUB_PARAMETERS
    )


_BARE_TYPES = frozenset({UserText, UserImage, AssistantText, ToolCall, ToolResult, Reasoning})


def _fast_events(items: Sequence[object]) -> list[WireEvent]:
    """`wire_events` by exact type first (pydantic's ``isinstance`` costs ~0.5 us an event);
    a `Compaction` goes as its user-side context, as on the other routes."""
    events = [
        item.event
        if type(item) is StoredEvent and type(item.event) is not Compaction
        else item
        if type(item) in _BARE_TYPES
        else wire_events((item,))[0]
        for item in items
    ]
    return cast(list[WireEvent], events)


def task_cache_key(model: str, system: str | None, first: WireEvent) -> str:
    """A prompt-cache key that every turn of one task shares: a digest of the model, the
    system prompt and the log's first event (which never change within a task)."""
    digest = hashlib.sha256()
    for part in (model, system or "", first.model_dump_json()):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return "nisse-" + digest.hexdigest()[:32]


class OpenAIResponsesRenderer:
    """Renders canonical logs as Responses requests and parses the replies."""

    def render_request(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
        prompt_cache_key: str | None = None,
    ) -> OpenAIResponsesRequest:
        """The typed request body for ``events`` (see the module docstring for the rules).
        ``cache`` is accepted for the clients' sake: OpenAI caches prompts by itself."""
        from nisse_llm.wire.openai_responses import OpenAIResponsesRequest

        items = log_items(events)
        check_log_images(items)
        log = _fast_events(items)
        plan, used = _plan(log, model)
        specs = _tool_specs(tools)
        key = prompt_cache_key or task_cache_key(model, system, log[0])
        fields = responses_fields(
            options,
            model=model,
            max_tokens=max_tokens,
            tools=[spec.name for spec in specs],
            stubbed=not specs and bool(used),
            prompt_cache_key=key,
        )
        declared: list[OpenAIResponsesFunctionTool] | None = None
        if specs:
            declared = [_map_tool(spec) for spec in specs]
        elif used:
            declared = [_map_stub_tool(name) for name in used]
        instructions = system if system is not None and system.strip() else None
        return OpenAIResponsesRequest(
            model=model, instructions=instructions, input=plan, tools=declared, **fields
        )

    def render_bytes(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
        prompt_cache_key: str | None = None,
    ) -> bytes:
        """The encoded body, byte-identical to the typed request's dump (``exclude_none``),
        joined from input items encoded once per event (`_MEMO`): a log re-sent grown by a
        turn costs the walk over it, its new events' encoding and one join."""
        items = log_items(events)
        check_log_images(items)
        log = _fast_events(items)
        fragments, used = _walk(log, model, _Encoded)
        specs = _tool_specs(tools)
        fields = responses_fields(
            options,
            model=model,
            max_tokens=max_tokens,
            tools=[spec.name for spec in specs],
            stubbed=not specs and bool(used),
            prompt_cache_key=prompt_cache_key or task_cache_key(model, system, log[0]),
        )
        parts = [b'{"model":', _json(model)]
        if system is not None and system.strip():
            parts += [b',"instructions":', _json(system)]
        parts += [b',"input":[', b",".join(fragments), b"]"]
        if specs:
            declared = [_MEMO.get(spec, lambda t: _encode(_map_tool(t))) for spec in specs]
        else:
            declared = [_encode(_map_stub_tool(name)) for name in used]
        if declared:
            parts += [b',"tools":[', b",".join(declared), b"]"]
        include = fields.pop("include", None)
        for name, value in fields.items():
            parts += [b',"', name.encode(), b'":', _encode(value)]
        parts.append(b',"store":false')
        if include is not None:
            parts += [b',"include":', _json(include)]
        parts.append(b"}")
        return b"".join(parts)

    def render_parts(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
    ) -> list[bytes]:
        """The body of `render_bytes` as one part (the clients send parts)."""
        return [
            self.render_bytes(
                events, tools, model, system, max_tokens=max_tokens, cache=cache, options=options
            )
        ]

    def render(
        self,
        events: LogLike,
        tools: ToolsLike,
        model: str,
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        cache: PromptCache | None = None,
        options: RequestOptions | None = None,
        prompt_cache_key: str | None = None,
    ) -> dict[str, Any]:
        """The body as a fresh dict (decoded from `render_bytes`, so it is the same body)."""
        body = self.render_bytes(
            events,
            tools,
            model,
            system,
            max_tokens=max_tokens,
            cache=cache,
            options=options,
            prompt_cache_key=prompt_cache_key,
        )
        return cast(dict[str, Any], pydantic_core.from_json(body))

    def parse(
        self,
        body: bytes | str | Mapping[str, Any],
        *,
        requested_model: str,
        max_tokens: int | None = None,
    ) -> Completion:
        """A reply body as canonical events, usage and stop reason (`openai_responses_reply`)."""
        return parse_responses_reply(body, requested_model=requested_model, max_tokens=max_tokens)
