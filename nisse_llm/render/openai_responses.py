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
- Tools passed are function tools, ``strict: true`` for a spec marked strict (a
  `Toolbox` marks those whose schema fits strict mode) when the model takes strict tools
  (`CallRules.strict_tools`), else ``strict: false`` (two with one
  name are a `RenderError`; a schema without ``type`` gets ``"type": "object"``). With none passed but
  calls in the log, each tool name the log used is declared as a stub and ``tool_choice``
  is ``"none"``.
- `RequestOptions` map to their fields by `nisse_llm.render.openai_responses_fields`
  (``reasoning: {effort, summary: "auto"}``, ``max_output_tokens``, sampling where the
  model's rules allow it, ``stop`` refused). ``prompt_cache_key`` goes to OpenAI models
  only: the one given, else one made from the model, the system prompt and the log's first
  event, so every turn of a task sends the same key and hits the same cache.

The reply side (parsing) lives in `nisse_llm.render.openai_responses_reply`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

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
from nisse_llm.render._images import check_images_once
from nisse_llm.render._memo import FragmentMemo
from nisse_llm.render._options import encode_fields
from nisse_llm.render._walk import (
    ProgressCache,
    Shared,
    TurnWalk,
    bare_events,
    encode_model,
    json_bytes,
    object_schema,
    unique_specs,
)
from nisse_llm.render._wording import INTERRUPTED_TEXT, STUB_TOOL_DESCRIPTION, TOOL_ERROR_PREFIX
from nisse_llm.render.openai_responses_fields import responses_fields
from nisse_llm.render.openai_responses_reply import parse_responses_reply
from nisse_llm.routes.openai_responses import OPENAI_RESPONSES

if TYPE_CHECKING:
    from nisse_llm.config.call_rules import CallRules
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


def _image_part(image: Any, *, detail: bool) -> OpenAIResponsesInputPart:
    from nisse_llm.wire.openai_responses import OpenAIResponsesInputImage

    return OpenAIResponsesInputImage(image_url=image.data_url, detail="auto" if detail else None)


def _output_text(result: ToolResult) -> str:
    return TOOL_ERROR_PREFIX + result.output if result.is_error else result.output


def _output_item(call: ToolCall, result: ToolResult | None) -> OpenAIResponsesInputItem:
    from nisse_llm.wire.openai_responses import (
        OpenAIResponsesFunctionCallOutput,
        OpenAIResponsesInputText,
    )

    if result is None:
        return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=INTERRUPTED_RESULT)
    text = _output_text(result)
    if not result.images:
        return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=text)
    parts: list[OpenAIResponsesInputPart] = []
    if text:
        parts.append(OpenAIResponsesInputText(text=text))
    parts.extend(_image_part(image, detail=False) for image in result.images)
    return OpenAIResponsesFunctionCallOutput(call_id=call.call_id, output=parts)


class _Maker:
    """What the walk's entries are on this route: each input item as its wire model."""

    @staticmethod
    def keeps(event: Reasoning, tag: object) -> bool:
        return event.model == tag and replayable_reasoning(event.block)

    def item(self, event: WireEvent) -> Any:
        from nisse_llm.wire.openai_responses import (
            OpenAIResponsesAssistantMessage,
            OpenAIResponsesFunctionCall,
            OpenAIResponsesInputMessage,
        )

        if type(event) is AssistantText:
            return OpenAIResponsesAssistantMessage(content=event.text)
        if type(event) is ToolCall:
            return OpenAIResponsesFunctionCall(
                call_id=event.call_id, name=event.tool, arguments=_arguments(event)
            )
        if type(event) is Reasoning:
            return event.block
        if type(event) is UserText:
            return OpenAIResponsesInputMessage(content=event.text)
        assert type(event) is UserImage
        return OpenAIResponsesInputMessage(content=[_image_part(event.image, detail=True)])

    def user(self, event: UserText | UserImage) -> tuple[Any, None]:
        return self.item(event), None

    def turn(self, events: list[WireEvent]) -> list[tuple[Any, None]]:
        return [(self.item(event), None) for event in events]

    def answer(self, call: ToolCall, result: ToolResult | None) -> Any:
        return _output_item(call, result)


#: One memo for the route: event -> its encoded input item (see `_Encoded`).
_MEMO: FragmentMemo[Any, bytes] = FragmentMemo()
#: Each tool spec's encoded function tool where the model takes strict tools.
_STRICT_TOOLS: FragmentMemo[ToolSpec, bytes] = FragmentMemo()
#: A call the log never answered -> its synthetic output, encoded.
_INTERRUPTED: FragmentMemo[ToolCall, bytes] = FragmentMemo()


class _Encoded(_Maker):
    """Each input item as its encoded bytes, once per event (events never change): the
    typed item's dump, so the joined body is the typed request's dump. The common items
    are spelled out around pydantic-core's encoding of each value, in the wire models'
    field order, which is 2-3x cheaper than building the models (as on the chat route);
    a property test holds the bytes to the typed request's dump."""

    def item(self, event: WireEvent) -> bytes:
        return _MEMO.get(event, self._spelled)

    def _spelled(self, event: WireEvent) -> bytes:
        if type(event) is AssistantText:
            return _ASSISTANT + json_bytes(event.text) + b"}"
        if type(event) is ToolCall:
            return (
                b'{"type":"function_call","call_id":'
                + json_bytes(event.call_id)
                + b',"name":'
                + json_bytes(event.tool)
                + b',"arguments":'
                + json_bytes(_arguments(event))
                + b"}"
            )
        if type(event) is UserText:
            return _USER + json_bytes(event.text) + b"}"
        return _encode(super().item(event))

    def answer(self, call: ToolCall, result: ToolResult | None) -> bytes:
        if result is None:
            return _INTERRUPTED.get(call, lambda c: _output_bytes(c, INTERRUPTED_RESULT))
        if result.images:
            return _MEMO.get(result, lambda r: _encode(_output_item(call, r)))
        return _MEMO.get(result, lambda r: _output_bytes(call, _output_text(r)))


_ASSISTANT = b'{"type":"message","role":"assistant","content":'
_USER = b'{"type":"message","role":"user","content":'


def _output_bytes(call: ToolCall, text: str) -> bytes:
    return (
        b'{"type":"function_call_output","call_id":'
        + json_bytes(call.call_id)
        + b',"output":'
        + json_bytes(text)
        + b"}"
    )


_TYPED = _Maker()
_ENCODED = _Encoded()


def _input(walk: TurnWalk) -> tuple[list[Any], list[str]]:
    """The input items in order, and the tool names the log's calls use."""
    count, items = walk.finish()
    if not count:
        raise RenderError(_NOTHING_TO_SEND)
    return items, walk.used_tools()


def _encode(item: Any) -> bytes:
    """An input item (a wire model, or a reasoning item's dict) as JSON bytes, by the
    route's dump convention (``exclude_none`` on models; a dict goes as it is)."""
    return encode_model(item) if isinstance(item, BaseModel) else json_bytes(item)


def _arguments(call: ToolCall) -> str:
    return json_bytes(call.arguments).decode()


def _map_tool(spec: ToolSpec, strict: bool = False) -> OpenAIResponsesFunctionTool:
    from nisse_llm.wire.openai_responses import OpenAIResponsesFunctionTool

    return OpenAIResponsesFunctionTool(
        name=spec.name,
        description=spec.description or None,
        parameters=object_schema(spec.parameters),
        strict=strict and spec.strict,
    )


def _map_stub_tool(name: str) -> OpenAIResponsesFunctionTool:
    from nisse_llm.wire.openai_responses import OpenAIResponsesFunctionTool

    return OpenAIResponsesFunctionTool(
        name=name, description=STUB_TOOL_DESCRIPTION, parameters=_STUB_PARAMETERS
    )


def task_cache_key(model: str, system: str | None, first: WireEvent) -> str:
    """A prompt-cache key that every turn of one task shares: a digest of the model, the
    system prompt and the log's first event (which never change within a task)."""
    digest = hashlib.sha256()
    for part in (model, system or "", first.model_dump_json()):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return "nisse-" + digest.hexdigest()[:32]


def _request_fields(
    items: Sequence[object],
    specs: list[ToolSpec],
    used: Sequence[str],
    model: str,
    system: str | None,
    rules: CallRules,
    options: RequestOptions | None,
    prompt_cache_key: str | None,
) -> dict[str, Any]:
    """The fields options decide, for the typed and the byte path alike; the cache key
    defaults to the task's (`task_cache_key`)."""
    return responses_fields(
        options,
        model=model,
        rules=rules,
        tools=[spec.name for spec in specs],
        stubbed=not specs and bool(used),
        prompt_cache_key=prompt_cache_key
        or task_cache_key(model, system, bare_events(items[:1])[0]),
    )


def _envelope(
    model: str,
    system: str | None,
    specs: list[ToolSpec],
    used: Sequence[str],
    fields: dict[str, Any],
    strict: bool,
) -> tuple[bytes, bytes]:
    """The body's bytes before its first input item and after its last (the byte path
    keeps them per renderer: an agent sends the same model, system, tools and options each
    call, and its log's first event, which the cache key is made from, stays)."""
    head = [b'{"model":', json_bytes(model)]
    if system is not None and system.strip():
        head += [b',"instructions":', json_bytes(system)]
    head.append(b',"input":[')
    tail = [b"]"]
    if specs:
        memo = _STRICT_TOOLS if strict else _MEMO
        declared = [memo.get(spec, lambda t: _encode(_map_tool(t, strict))) for spec in specs]
    else:
        declared = [_encode(_map_stub_tool(name)) for name in used]
    if declared:
        tail += [b',"tools":[', b",".join(declared), b"]"]
    include = fields.pop("include", None)
    tail += encode_fields(fields)
    tail.append(b',"store":false')
    if include is not None:
        tail += [b',"include":', json_bytes(include)]
    tail.append(b"}")
    return b"".join(head), b"".join(tail)


class OpenAIResponsesRenderer(Renderer):
    """Renders canonical logs as Responses requests and parses the replies."""

    reply_parser = staticmethod(parse_responses_reply)
    route = OPENAI_RESPONSES
    takes_prompt_cache_key = True

    @from_args
    def render_request(self, call: CallParams) -> OpenAIResponsesRequest:
        """The typed request body of the call (see the module docstring for the rules).
        ``cache`` is accepted for the clients' sake: OpenAI caches prompts by itself (its
        passthrough prefixes still say which models are Anthropic's)."""
        from nisse_llm.wire.openai_responses import OpenAIResponsesRequest

        events, tools, model, system = call.events, call.tools, call.model, call.system
        rules = self.rules_for(call)
        items = log_items(events)
        walk = TurnWalk(Shared(), _TYPED, model)
        walk.consume(list(items))
        check_images_once(walk)
        plan, used = _input(walk)
        specs = unique_specs(tools)
        fields = _request_fields(
            items, specs, used, model, system, rules, call.options, call.prompt_cache_key
        )
        declared: list[OpenAIResponsesFunctionTool] | None = None
        if specs:
            declared = [_map_tool(spec, rules.strict_tools) for spec in specs]
        elif used:
            declared = [_map_stub_tool(name) for name in used]
        instructions = system if system is not None and system.strip() else None
        return OpenAIResponsesRequest(
            model=model, instructions=instructions, input=plan, tools=declared, **fields
        )

    def encode_parts(self, call: CallParams) -> list[bytes]:
        """The body of ``call`` in parts, under the walk cache's lock: the head, the cached
        blocks of the log's settled input items (`nisse_llm.render._rope`), and the rest
        with the tail. Input items are encoded once per event (`_MEMO`) and the walk
        resumes from the log this one extends: a log re-sent grown by a turn costs its new
        events and one join of what is not yet in a block."""
        events, tools, model, system = call.events, call.tools, call.model, call.system
        max_tokens, cache, options, rules = call.max_tokens, call.cache, call.options, call.rules
        prompt_cache_key = call.prompt_cache_key
        assert rules is not None, "the route decides a call's rules before it is encoded"
        items = log_items(events)
        walks: ProgressCache[TurnWalk] = self._walks
        walk = walks.walk(items, model, lambda shared: TurnWalk(shared, _ENCODED, model))
        check_images_once(walk)
        count, rest = walk.finish(walk.rope.covered)
        if not count:
            raise RenderError(_NOTHING_TO_SEND)
        # The last item always goes fresh, so the final part is never a bare block.
        base = walk.rope.covered
        blocks, start = walk.grow_rope(count - 1).usable(count - 1)
        if start != base:
            count, rest = walk.finish(start)
        used = walk.used_tools()
        specs = unique_specs(tools)
        # Stub tools are known by name (all a stub depends on), passed specs by identity.
        prefixes = () if cache is None else cache.prefixes
        key = (
            model,
            system,
            max_tokens,
            options,
            prefixes,
            prompt_cache_key,
            () if specs else tuple(used),
        )
        head, tail = self._envelopes.get(
            key,
            (items[0], *specs),
            lambda: _envelope(
                model,
                system,
                specs,
                used,
                _request_fields(
                    items, specs, used, model, system, rules, options, prompt_cache_key
                ),
                rules.strict_tools,
            ),
        )
        return [head, *blocks, b",".join(rest) + tail]
