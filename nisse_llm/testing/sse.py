"""Non-streaming reply bodies re-told as realistic SSE streams, whole or broken, for tests.

The reverse of `nisse_llm.stream.deltas`: a chat-completions body becomes a role chunk,
content and refusal in fragments, reasoning and LiteLLM thinking-block fragments, tool
calls interleaved by ``index`` (id and name only on each call's first delta, arguments
in fragments), a finish chunk, a usage chunk with empty ``choices`` and ``[DONE]``; a
messages body becomes ``message_start`` (usage with one output token), a ``ping``, each
block's start, deltas (``text_delta``, ``input_json_delta``, ``thinking_delta``,
``signature_delta``, ``citations_delta``) and stop, ``message_delta`` (stop reason,
final output tokens) and ``message_stop``; a Responses body becomes ``response.created``,
per output item ``response.output_item.added``, its deltas (``output_text``, reasoning
summary text, function-call arguments) and ``response.output_item.done`` with the whole
item, and ``response.completed`` (``response.incomplete``, ``response.failed``) with the
whole body. Accumulating the stream rebuilds the body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nisse_llm.routes import ROUTE_TABLE, load
from nisse_llm.stream._sse import ServerSentEvent

__all__ = [
    "anthropic_messages_events",
    "cut",
    "encode_sse",
    "openai_chat_events",
    "openai_responses_events",
    "split_bytes",
    "sse_stream",
    "stream_events",
    "with_error_event",
    "without_final_event",
]

# Message fields the chat encoder streams in fragments; any other field rides whole on
# the role chunk.
_OPENAI_STREAMED = frozenset(
    {"role", "content", "refusal", "reasoning_content", "thinking_blocks", "tool_calls"}
)
_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_STOP_FIELDS = ("stop_reason", "stop_sequence", "stop_details")


def _json(value: Any) -> str:
    # Compact and raw UTF-8, as providers send it: multi-byte characters cross chunk cuts.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _event(data: Any, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(data=_json(data), event=event)


# --- chat completions --------------------------------------------------------------------


def openai_chat_events(body: Mapping[str, Any], *, chunk_size: int = 8) -> list[ServerSentEvent]:
    """A ``chat.completion`` body as the ``chat.completion.chunk`` events that stream it.

    ``chunk_size`` is the number of characters of text (content, reasoning, arguments)
    per delta.
    """
    base = {k: v for k, v in body.items() if k not in ("choices", "usage", "object")}
    base["object"] = "chat.completion.chunk"
    has_usage = body.get("usage") is not None

    def chunk(choices: list[dict[str, Any]], usage: Any = None) -> ServerSentEvent:
        data = {**base, "choices": choices}
        if has_usage:
            data["usage"] = usage
        return _event(data)

    events: list[ServerSentEvent] = []
    for position, choice in enumerate(body.get("choices") or ()):
        index = choice.get("index", position)

        def delta(
            fields: dict[str, Any], finish: Any = None, index: int = index
        ) -> ServerSentEvent:
            return chunk(
                [{"index": index, "delta": fields, "logprobs": None, "finish_reason": finish}]
            )

        message = choice.get("message") or {}
        events.append(delta(_openai_role_delta(message)))
        events.extend(delta(d) for d in _openai_text_deltas(message, chunk_size))
        events.extend(delta({"tool_calls": [d]}) for d in _openai_tool_deltas(message, chunk_size))
        events.append(delta({}, choice.get("finish_reason")))
    if has_usage:
        events.append(chunk([], body["usage"]))
    events.append(ServerSentEvent(data="[DONE]"))
    return events


def _openai_role_delta(message: Mapping[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = {"role": message.get("role", "assistant")}
    content = message.get("content")
    first["content"] = "" if isinstance(content, str) else content
    for key, value in message.items():
        if key not in _OPENAI_STREAMED or (key != "content" and not isinstance(value, str | list)):
            first[key] = value
    return first


def _openai_text_deltas(message: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):
        deltas.extend({"reasoning_content": piece} for piece in _pieces(reasoning, size))
    blocks = message.get("thinking_blocks")
    for at, block in enumerate(blocks if isinstance(blocks, list) else ()):
        # LiteLLM's fragments: the text in pieces, then empty text with the signature.
        if block.get("type") != "thinking":
            deltas.append({"thinking_blocks": [{**block, "index": at}]})
            continue
        for piece in _pieces(block.get("thinking") or "", size):
            deltas.append(
                {"thinking_blocks": [{"type": "thinking", "thinking": piece, "index": at}]}
            )
        rest = {k: v for k, v in block.items() if k != "thinking"}
        deltas.append({"thinking_blocks": [{**rest, "thinking": "", "index": at}]})
    content = message.get("content")
    if isinstance(content, str):
        deltas.extend({"content": piece} for piece in _pieces(content, size))
    refusal = message.get("refusal")
    if isinstance(refusal, str):
        deltas.extend({"refusal": piece} for piece in _pieces(refusal, size))
    return deltas


def _openai_tool_deltas(message: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    rounds: list[list[dict[str, Any]]] = []
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else _json(arguments or {})
        first = {k: v for k, v in call.items() if k != "function"}
        first["index"] = index
        first["function"] = {"name": function.get("name"), "arguments": ""}
        steps = [first]
        steps.extend({"index": index, "function": {"arguments": p}} for p in _pieces(text, size))
        rounds.append(steps)
    # Round robin: each call's fragments interleave with the others'.
    longest = max((len(steps) for steps in rounds), default=0)
    return [steps[i] for i in range(longest) for steps in rounds if i < len(steps)]


# --- messages ----------------------------------------------------------------------------


def anthropic_messages_events(
    body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """A ``message`` body as the events that stream it (``chunk_size``: characters per delta)."""
    message = {k: v for k, v in body.items() if k != "content"}
    message["content"] = []
    for key in _STOP_FIELDS:
        if key in message:
            message[key] = None
    usage = body.get("usage")
    final_output = usage.get("output_tokens") if isinstance(usage, Mapping) else None
    if isinstance(usage, Mapping) and final_output is not None:
        message["usage"] = {**usage, "output_tokens": min(1, final_output)}
    events = [_event({"type": "message_start", "message": message}, "message_start")]
    for index, block in enumerate(body.get("content") or ()):
        start, deltas = _anthropic_block(block, chunk_size)
        events.append(
            _event(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        if index == 0:
            events.append(_event({"type": "ping"}, "ping"))
        events.extend(
            _event(
                {"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta"
            )
            for d in deltas
        )
        events.append(_event({"type": "content_block_stop", "index": index}, "content_block_stop"))
    final: dict[str, Any] = {
        "type": "message_delta",
        "delta": {key: body[key] for key in _STOP_FIELDS if key in body},
    }
    if final_output is not None:
        final["usage"] = {"output_tokens": final_output}
    events.append(_event(final, "message_delta"))
    events.append(_event({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_block(
    block: Mapping[str, Any], size: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = block.get("type")
    if kind == "text":
        start = {**block, "text": ""}
        citations = block.get("citations")
        deltas: list[dict[str, Any]] = [
            {"type": "text_delta", "text": piece}
            for piece in _pieces(block.get("text") or "", size)
        ]
        if isinstance(citations, list) and citations:
            start["citations"] = []
            deltas.extend({"type": "citations_delta", "citation": c} for c in citations)
        return start, deltas
    if kind in _INPUT_BLOCKS:
        arguments = block.get("input")
        text = _json(arguments) if arguments else ""
        pieces = _pieces(text, size) or [""]
        return {**block, "input": {}}, [
            {"type": "input_json_delta", "partial_json": piece} for piece in pieces
        ]
    if kind == "thinking":
        start = {**block, "thinking": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": piece}
            for piece in _pieces(block.get("thinking") or "", size)
        ]
        signature = block.get("signature")
        if isinstance(signature, str):
            start["signature"] = ""
            deltas.append({"type": "signature_delta", "signature": signature})
        return start, deltas
    # redacted_thinking, server tool results and anything newer arrive whole.
    return dict(block), []


# --- responses ---------------------------------------------------------------------------


def _skeleton(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as ``response.output_item.added`` shows it: nothing generated yet."""
    kind = item.get("type")
    if kind == "message":
        return {**item, "status": "in_progress", "content": []}
    if kind == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    if kind == "reasoning":
        return {k: v for k, v in item.items() if k != "encrypted_content"} | {"summary": []}
    return dict(item)


def _item_deltas(item: Mapping[str, Any], at: int, size: int) -> list[tuple[str, dict[str, Any]]]:
    """The events between an item's ``added`` and ``done``."""
    ref = {"item_id": item.get("id"), "output_index": at}
    found: list[tuple[str, dict[str, Any]]] = []
    kind = item.get("type")
    if kind == "message":
        for number, part in enumerate(item.get("content") or ()):
            where = {**ref, "content_index": number}
            text = part.get("text") if part.get("type") == "output_text" else None
            empty = {**part, "text": ""} if text is not None else part
            found.append(("response.content_part.added", {**where, "part": empty}))
            for piece in _pieces(text or "", size):
                found.append(
                    ("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
                )
            if text is not None:
                found.append(("response.output_text.done", {**where, "text": text, "logprobs": []}))
            found.append(("response.content_part.done", {**where, "part": part}))
    elif kind == "function_call":
        arguments = str(item.get("arguments") or "")
        for piece in _pieces(arguments, size):
            found.append(("response.function_call_arguments.delta", {**ref, "delta": piece}))
        found.append(("response.function_call_arguments.done", {**ref, "arguments": arguments}))
    elif kind == "reasoning":
        for number, part in enumerate(item.get("summary") or ()):
            where = {**ref, "summary_index": number}
            text = str(part.get("text", ""))
            found.append(
                ("response.reasoning_summary_part.added", {**where, "part": {**part, "text": ""}})
            )
            for piece in _pieces(text, size):
                found.append(("response.reasoning_summary_text.delta", {**where, "delta": piece}))
            found.append(("response.reasoning_summary_text.done", {**where, "text": text}))
            found.append(("response.reasoning_summary_part.done", {**where, "part": part}))
    return found


def openai_responses_events(
    body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """A Responses body as the events that stream it, each ``event:``-named by its type
    and numbered (``sequence_number``), as OpenAI sends them."""
    status = body.get("status") or "completed"
    final = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
        status, "response.completed"
    )
    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    steps: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": opening})]
    for at, item in enumerate(body.get("output") or ()):
        steps.append(("response.output_item.added", {"output_index": at, "item": _skeleton(item)}))
        steps.extend(_item_deltas(item, at, chunk_size))
        steps.append(("response.output_item.done", {"output_index": at, "item": item}))
    steps.append((final, {"response": dict(body)}))
    return [
        _event({"type": kind, "sequence_number": number, **fields}, kind)
        for number, (kind, fields) in enumerate(steps)
    ]


# --- bytes -------------------------------------------------------------------------------


def _kit(route: str) -> Any:
    """The testing kit's `RouteKit` of ``route`` (`nisse_llm.testing.route_kits`)."""
    return load(ROUTE_TABLE[route].kit)


def stream_events(
    route: str, body: Mapping[str, Any], *, chunk_size: int = 8
) -> list[ServerSentEvent]:
    """The events that stream ``body`` on ``route`` (its kit's, by the route table)."""
    events: list[ServerSentEvent] = _kit(route).events(body, chunk_size=chunk_size)
    return events


def encode_sse(
    events: Iterable[ServerSentEvent], *, newline: str = "\n", comments: bool = False
) -> bytes:
    """Events as SSE bytes; ``newline`` may be LF, CRLF or CR, ``comments`` adds keep-alives."""
    lines: list[str] = []
    for event in events:
        if comments:
            lines.append(": keep-alive")
        if event.event != "message":
            lines.append(f"event: {event.event}")
        if event.id is not None:
            lines.append(f"id: {event.id}")
        lines.extend(f"data: {line}" for line in event.data.split("\n"))
        lines.append("")
    return "".join(line + newline for line in lines).encode()


def sse_stream(
    route: str, body: Mapping[str, Any], *, chunk_size: int = 8, newline: str = "\n"
) -> bytes:
    """``body`` streamed on ``route``, as the bytes a server sends."""
    return encode_sse(stream_events(route, body, chunk_size=chunk_size), newline=newline)


def split_bytes(data: bytes, size: int) -> list[bytes]:
    """``data`` in chunks of ``size`` bytes, cut wherever that falls (inside characters too)."""
    return [data[i : i + size] for i in range(0, len(data), size)]


# --- broken streams ----------------------------------------------------------------------


def cut(data: bytes, *, at: int) -> bytes:
    """The stream as a client sees it when the connection drops after ``at`` bytes."""
    return data[:at]


def without_final_event(events: Sequence[ServerSentEvent]) -> list[ServerSentEvent]:
    """The stream with its last event (``message_stop`` or ``[DONE]``) missing."""
    return list(events[:-1])


def with_error_event(
    route: str,
    events: Sequence[ServerSentEvent],
    *,
    after: int,
    error_type: str = "overloaded_error",
    message: str = "Overloaded",
) -> list[ServerSentEvent]:
    """The first ``after`` events, then the error event that ends the stream on ``route``.

    Anthropic sends ``event: error`` with its error body; LiteLLM's chat route sends a
    chunk ``{"error": {...}}`` in the OpenAI error shape; the Responses API an ``error``
    event with ``code`` and ``message``.
    """
    error: ServerSentEvent = _kit(route).error_event(error_type, message)
    return [*events[:after], error]
