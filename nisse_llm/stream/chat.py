"""The chat route's stream (``/chat/completions``): chunks in, deltas out, the reply at the end."""

from __future__ import annotations

import json
from typing import Any

from nisse_llm.errors import PartialReply, PartialToolCall
from nisse_llm.routes.openai_chat import OPENAI_CHAT
from nisse_llm.stream._envelope import Envelope
from nisse_llm.stream._fragments import Joined, TextFragment, fragment
from nisse_llm.stream.base import (
    ParseFn,
    ReasoningDelta,
    RefusalDelta,
    StreamAccumulator,
    StreamDelta,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    as_dict,
    as_index,
    join_text,
    load_event,
    malformed,
    merge_value,
    tool_name,
    unterminated,
)

__all__ = ["OpenAIChatStreamAccumulator"]


class _ToolCallState:
    __slots__ = ("arguments", "extra", "id", "name", "type")

    def __init__(self) -> None:
        self.id: str | None = None
        self.type: str | None = None
        self.name: str | None = None
        self.arguments = ""
        self.extra: dict[str, Any] = {}


def _grown(
    joined: Joined | None,
    value: str,
    kind: type[TextFragment],
    out: list[StreamDelta] | None,
) -> Joined:
    """``joined`` (a new one where the field had not come yet) grown by ``value``, with its
    delta of type ``kind`` added to ``out`` (an empty fragment is no delta)."""
    if joined is None:
        joined = Joined()
    if value:
        joined.parts.append(value)
        if out is not None:
            out.append(fragment(kind, value, joined))
    return joined


class _ChoiceState:
    __slots__ = (
        "content",
        "extra",
        "finish_reason",
        "nulls",
        "reasoning",
        "refusal",
        "role",
        "text",
        "thinking",
        "thinking_at",
        "tool_calls",
    )

    def __init__(self) -> None:
        self.role: str | None = None
        # None: the field never came as text (a Joined) or as content parts (a list).
        self.text: Joined | None = None
        self.content: list[Any] | None = None
        self.refusal: str | None = None
        self.reasoning: Joined | None = None
        self.thinking: list[dict[str, Any]] = []
        self.thinking_at: dict[int, dict[str, Any]] = {}
        self.tool_calls: dict[int, _ToolCallState] = {}
        self.finish_reason: str | None = None
        self.extra: dict[str, Any] = {}
        #: Known fields that came only as null (kept, so the rebuilt body has them too).
        self.nulls: set[str] = set()


# Known delta fields with their own rules; `provider_specific_fields` is LiteLLM's
# duplicate of thinking_blocks and citations, already carried by the fields themselves.
_OPENAI_KNOWN = frozenset(
    {
        "role",
        "content",
        "refusal",
        "reasoning_content",
        "thinking_blocks",
        "tool_calls",
        "provider_specific_fields",
    }
)
# Chunk fields that are not the completion's: OpenAI pads each chunk with random
# `obfuscation` characters against length side channels.
_OPENAI_NOT_TOP = frozenset({"choices", "usage", "object", "obfuscation", "error"})


class OpenAIChatStreamAccumulator(StreamAccumulator):
    """``chat.completion.chunk`` events -> deltas -> the ``chat.completion`` body.

    Tool calls are assembled by ``index`` (id and name may come only on a call's first
    delta; calls may interleave); usage comes from the final chunk with empty
    ``choices`` (requests send ``stream_options.include_usage``); LiteLLM's
    ``reasoning_content`` and ``thinking_blocks`` fragments are joined. Deltas are
    yielded for choice 0, the one a reply is parsed from.
    """

    route = OPENAI_CHAT.name

    def __init__(self, *, requested_model: str, parse: ParseFn) -> None:
        super().__init__(requested_model=requested_model, parse=parse)
        self._top: dict[str, Any] = {}
        # Top-level fields already known (non-null), checked as a set before a slower walk.
        self._top_known: set[str] = set(_OPENAI_NOT_TOP)
        self._choices: dict[int, _ChoiceState] = {}
        self._first: _ChoiceState | None = None  # choice 0, the reply
        self._usage: Any = None
        # The last text-only chunk's bytes around its text (see nisse_llm/stream/_envelope.py).
        self._envelope = Envelope()

    def on_data(self, name: str, data: bytes) -> list[StreamDelta]:
        if data[:1] != b"{" and data.strip() == b"[DONE]":
            self._done = True
            return []
        text = self._envelope.match(data)
        if text is not None:
            # The last text-only chunk again, with new text: its other fields are the
            # same bytes, already applied.
            state = self._first
            if state is not None and state.text is not None and state.content is None:
                if not text:
                    return []
                state.text.parts.append(text)
                return [fragment(TextDelta, text, state.text)]
        chunk = load_event(data)
        if chunk.get("error") is not None:
            # LiteLLM reports a failure after the first byte as a chunk {"error": {...}}.
            raise self._fail(data)
        if not chunk.keys() <= self._top_known:
            for key, value in chunk.items():
                if key not in self._top_known:
                    self._top[key] = value
                    if value is not None:
                        self._top_known.add(key)
        usage = chunk.get("usage")
        if usage is not None:
            self._usage = usage
        choices = chunk.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise malformed("choices is not a list", choices)
        out: list[StreamDelta] = []
        for choice in choices:
            if type(choice) is not dict:
                choice = as_dict(choice, "a choice")
            index = choice.get("index", 0)
            target: list[StreamDelta] | None = out
            if index == 0 and type(index) is int:
                state = self._first
                if state is None:
                    state = self._first = self._choices[0] = _ChoiceState()
            else:
                index = as_index(index, "a choice")
                state = self._choices.get(index)
                if state is None:
                    state = self._choices[index] = _ChoiceState()
                if index:
                    target = None
            delta = choice.get("delta")
            if delta:
                if type(delta) is not dict:
                    delta = as_dict(delta, "a delta")
                text = delta.get("content")
                if len(delta) == 1 and type(text) is str and state.content is None:
                    # The hot path: a delta of reply text and nothing else (`_grown`,
                    # inlined: it runs once per delta).
                    joined = state.text
                    if joined is None:
                        joined = state.text = Joined()
                    if text:
                        joined.parts.append(text)
                        if target is not None:
                            target.append(fragment(TextDelta, text, joined))
                    if target is not None and len(choices) == 1 and self._envelope.tries > 0:
                        self._envelope.learn(data, b'"content":"', text)
                else:
                    self._apply(state, delta, target)
            elif delta is not None:
                self._apply(state, as_dict(delta, "a delta"), target)
            finish = choice.get("finish_reason")
            if finish is not None:
                state.finish_reason = finish
        return out

    def _apply(
        self, state: _ChoiceState, delta: dict[str, Any], out: list[StreamDelta] | None
    ) -> None:
        for key, value in delta.items():
            if value is None:
                if key in _OPENAI_KNOWN:
                    state.nulls.add(key)
                else:
                    merge_value(state.extra, key, None)
            elif key == "content":
                self._apply_content(state, value, out)
            elif key == "tool_calls":
                if not isinstance(value, list):
                    raise malformed("tool_calls is not a list", value)
                for call in value:
                    self._apply_tool_call(state, as_dict(call, "a tool call delta"), out)
            elif key == "role":
                if state.role is None and isinstance(value, str):
                    state.role = value
            elif key == "refusal":
                state.refusal = join_text(state.refusal, value, key)
                if out is not None and value:
                    out.append(RefusalDelta(value, state.refusal))
            elif key == "reasoning_content":
                if type(value) is not str:
                    raise malformed(f"{key} is not a string", value)
                state.reasoning = _grown(state.reasoning, value, ReasoningDelta, out)
            elif key == "thinking_blocks":
                if not isinstance(value, list):
                    raise malformed("thinking_blocks is not a list", value)
                for block in value:
                    _merge_thinking(state, as_dict(block, "a thinking block"))
            elif key != "provider_specific_fields":
                merge_value(state.extra, key, value)

    @staticmethod
    def _apply_content(state: _ChoiceState, text: Any, out: list[StreamDelta] | None) -> None:
        if type(text) is str:
            if state.content is not None:
                raise malformed("content mixes parts and text", text)
            state.text = _grown(state.text, text, TextDelta, out)
        elif isinstance(text, list):
            if state.text is not None and state.text.parts:
                raise malformed("content mixes text and parts", text)
            state.content = [*(state.content or []), *text]
        elif text is not None:
            raise malformed("content is not a string", text)

    @staticmethod
    def _apply_tool_call(
        state: _ChoiceState, call: dict[str, Any], out: list[StreamDelta] | None
    ) -> None:
        raw_index = call.get("index")
        function = call.get("function")
        if function is None:
            function = {}
        function = as_dict(function, "a tool call's function")
        name = function.get("name")
        if raw_index is None:
            # Some compatible servers omit the index: a name starts a call, else continue.
            count = len(state.tool_calls)
            raw_index = count if (name or count == 0) else max(state.tool_calls)
        index = as_index(raw_index, "a tool call delta")
        tool = state.tool_calls.get(index)
        if tool is None:
            tool = state.tool_calls[index] = _ToolCallState()
        call_id, kind = call.get("id"), call.get("type")
        if isinstance(call_id, str) and call_id and not tool.id:
            tool.id = call_id
        if isinstance(kind, str) and kind and tool.type is None:
            tool.type = kind
        if isinstance(name, str) and name and not tool.name:
            tool.name = tool_name(name)
            if out is not None:
                out.append(ToolCallStarted(index, name))
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            if arguments:
                tool.arguments += arguments
                if out is not None:
                    out.append(ToolArgumentsDelta(index, arguments))
        elif isinstance(arguments, dict):
            # A compatible server may send the arguments object whole.
            text = json.dumps(arguments)
            tool.arguments += text
            if out is not None:
                out.append(ToolArgumentsDelta(index, text))
        elif arguments is not None:
            raise malformed("tool call arguments are not a string", arguments)
        for key, value in call.items():
            if key not in ("index", "id", "type", "function"):
                merge_value(tool.extra, key, value)

    def missing_end(self) -> str | None:
        if not self._done:
            return "before [DONE]"
        if not self._choices:
            return "with no choices"
        # Only choice 0 is the reply: LiteLLM's re-streamed chunks drop finish_reason for
        # the choices after the first, so their missing finish is no interruption.
        first = self._choices.get(0)
        if first is None or first.finish_reason is None:
            return "without a finish_reason for choice 0"
        return None

    def cut_shown(self) -> str | None:
        state = self._choices[0]
        finish = state.finish_reason
        if finish in ("length", "content_filter"):
            return None  # the parser's own failure says more (TruncatedResponse, ModelRefusal)
        if finish not in ("tool_calls", "function_call"):
            for _, call in sorted(state.tool_calls.items()):
                if unterminated(call.arguments):
                    return (
                        f"tool call {call.name!r}'s arguments stop mid-JSON "
                        f"(finish_reason {finish!r})"
                    )
        for block in state.thinking:
            # A finished Anthropic thinking block always carries its signature; LiteLLM
            # sends it last, in a fragment of its own.
            if block.get("type") == "thinking" and not block.get("signature"):
                return "a thinking block came without its signature"
        return None

    def body_so_far(self, *, partial: bool) -> dict[str, Any]:
        body: dict[str, Any] = dict(self._top)
        body["object"] = "chat.completion"
        body["choices"] = [
            {
                "index": index,
                "message": _openai_message(state),
                "finish_reason": state.finish_reason,
                "logprobs": None,
            }
            for index, state in sorted(self._choices.items())
        ]
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def partial(self) -> PartialReply:
        state = self._choices.get(0) or _ChoiceState()
        return PartialReply(
            text=state.text.text() if state.text is not None and state.content is None else "",
            reasoning=state.reasoning.text() if state.reasoning is not None else "",
            tool_calls=tuple(
                PartialToolCall(index, call.name, call.arguments)
                for index, call in sorted(state.tool_calls.items())
            ),
            events=self._events,
            body=self.body_so_far(partial=True),
        )


def _merge_thinking(state: _ChoiceState, fragment: dict[str, Any]) -> None:
    # LiteLLM streams each Anthropic thinking block as fragments tagged with the block's
    # index: its text in pieces, then one with empty text and the signature. The
    # non-streaming message carries the blocks whole and untagged.
    at = fragment.get("index")
    block: dict[str, Any] | None
    if isinstance(at, int):
        block = state.thinking_at.get(at)
    else:
        last = state.thinking[-1] if state.thinking else None
        joinable = (
            last is not None
            and last.get("type") == "thinking" == fragment.get("type")
            and not last.get("signature")
        )
        block = last if joinable else None
    if block is None:
        block = {}
        state.thinking.append(block)
        if isinstance(at, int):
            state.thinking_at[at] = block
    for key, value in fragment.items():
        if key == "index":
            continue
        current = block.get(key)
        if key in ("thinking", "signature", "data") and isinstance(value, str):
            block[key] = (current or "") + value if isinstance(current, str | None) else value
        elif value is not None or key not in block:
            block[key] = value


def _openai_message(state: _ChoiceState) -> dict[str, Any]:
    message: dict[str, Any] = {"role": state.role or "assistant"}
    # Fields that came only as null first, so that any value that came later wins.
    message.update((key, None) for key in state.nulls if key != "provider_specific_fields")
    message.update(state.extra)
    if state.content is not None:
        message["content"] = state.content
    else:
        message["content"] = state.text.text() if state.text is not None else None
    if state.refusal is not None:
        message["refusal"] = state.refusal
    if state.reasoning is not None:
        message["reasoning_content"] = state.reasoning.text()
    if state.thinking:
        message["thinking_blocks"] = [dict(block) for block in state.thinking]
    if state.tool_calls:
        message["tool_calls"] = [
            {
                **call.extra,
                "id": call.id or "",
                "type": call.type or "function",
                "function": {"name": call.name or "", "arguments": call.arguments},
            }
            for _, call in sorted(state.tool_calls.items())
        ]
    return message
