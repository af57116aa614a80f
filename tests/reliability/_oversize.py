"""One oversized input, run in its own process so a crash or a memory blow-up cannot hide.

Run as ``python -m tests.reliability._oversize CASE``; prints one JSON object: the
outcome (``ok`` or the `LLMError` class raised; anything else escapes and fails the
process), the time taken and memory: RSS with the input built, and the peak during the
call (Linux ``VmHWM``, reset just before the call through ``/proc/self/clear_refs``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import (
    Completion,
    StoredEvent,
    ToolCall,
    ToolResult,
    UserText,
    mint_call_id,
)
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.task.logstore import FileTaskStore

MB = 1024 * 1024
BIG = 100 * MB
DEPTH = 10_000
MODEL = "claude-sonnet-4-5"
CHAT = OpenAIChatRenderer()
MESSAGES = AnthropicMessagesRenderer()


def _chat_body(message: dict[str, Any], *, extra: str = "") -> bytes:
    head = (
        '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",'
        f'"choices":[{{"index":0,"finish_reason":"stop","message":{json.dumps(message)}}}],'
        '"usage":{"prompt_tokens":1,"completion_tokens":1}'
    )
    return (head + extra + "}").encode()


def _messages_body(content: list[dict[str, Any]], *, extra: str = "") -> bytes:
    head = (
        f'{{"id":"msg_1","type":"message","role":"assistant","model":"{MODEL}",'
        f'"content":{json.dumps(content)},"stop_reason":"end_turn",'
        '"usage":{"input_tokens":1,"output_tokens":1}'
    )
    return (head + extra + "}").encode()


def _nested_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _nested_dict(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _big_tool_output_log() -> list[Any]:
    call = ToolCall(call_id=mint_call_id(), tool="read_file", arguments={"path": "big"})
    result = ToolResult(call_id=call.call_id, output="é" * (5 * MB))  # 10 MB of UTF-8
    return [UserText(text="read it"), call, result]


def _filler_array(size: int) -> str:
    return "[" + "0," * (size // 2) + "0]"


def _parse_chat(body: object) -> Callable[[], object]:
    return lambda: CHAT.parse(body, requested_model="gpt-4o")  # type: ignore[arg-type]


def _parse_messages(body: object) -> Callable[[], object]:
    return lambda: MESSAGES.parse(body, requested_model=MODEL)  # type: ignore[arg-type]


def _render_both(events: list[Any]) -> Callable[[], object]:
    def run() -> object:
        chat = CHAT.render_bytes(events, None, "gpt-4o")
        messages = MESSAGES.render_bytes(events, None, MODEL, max_tokens=1024)
        return len(chat) + len(messages)

    return run


def _render_each_way(route: str, events: list[Any]) -> Callable[[], object]:
    """Render through the byte path and the dict path of one route."""

    def run() -> object:
        if route == "chat":
            return len(CHAT.render_bytes(events, None, "gpt-4o")) + len(
                CHAT.render(events, None, "gpt-4o")
            )
        body = MESSAGES.render_bytes(events, None, MODEL, max_tokens=1024)
        return len(body) + len(MESSAGES.render(events, None, MODEL, max_tokens=1024))

    return run


def _store_round_trip(events: list[Any]) -> Callable[[], object]:
    def run() -> object:
        path = Path(os.environ["OVERSIZE_DIR"]) / "big.jsonl"
        store = FileTaskStore(path)
        store.append([StoredEvent.now(n, event) for n, event in enumerate(events)])
        found = store.read()
        if [record.event for record in found.records] != events:
            raise AssertionError("the log store changed a 10 MB record")
        return path.stat().st_size

    return run


def _case(name: str) -> Callable[[], object]:
    """Build the input of ``name`` (outside the measured call) and return the call."""
    if name == "chat_text_100mb":
        return _parse_chat(_chat_body({"role": "assistant", "content": "x" * BIG}))
    if name == "messages_text_100mb":
        return _parse_messages(_messages_body([{"type": "text", "text": "x" * BIG}]))
    if name == "chat_arguments_100mb":
        arguments = json.dumps({"data": "x" * BIG})
        wire_call = {"id": "c", "function": {"name": "t", "arguments": arguments}}
        return _parse_chat(_chat_body({"role": "assistant", "tool_calls": [wire_call]}))
    if name == "messages_input_100mb":
        block = {"type": "tool_use", "id": "t", "name": "t", "input": {"data": "x" * BIG}}
        return _parse_messages(_messages_body([block]))
    if name == "chat_unknown_field_100mb":
        extra = ',"padding":' + _filler_array(BIG)
        return _parse_chat(_chat_body({"role": "assistant", "content": "hi"}, extra=extra))
    if name == "messages_unknown_field_100mb":
        extra = ',"padding":' + _filler_array(BIG)
        return _parse_messages(_messages_body([{"type": "text", "text": "hi"}], extra=extra))
    # Random bytes behind a NUL: a random first byte that is JSON whitespace would move
    # the error's column and make the expected message flaky.
    if name == "chat_garbage_100mb":
        return _parse_chat(b"\x00" + os.urandom(BIG - 1))
    if name == "messages_garbage_100mb":
        return _parse_messages(b"\x00" + os.urandom(BIG - 1))
    if name == "chat_brackets_100mb":
        return _parse_chat(b"[" * BIG)
    if name == "messages_brackets_100mb":
        return _parse_messages(b"{" + b'"a":[' * (BIG // 5))
    if name == "chat_arguments_deep":
        function = {"name": "t", "arguments": _nested_json(DEPTH)}
        wire_call = {"id": "c", "type": "function", "function": function}
        return _parse_chat(_chat_body({"role": "assistant", "tool_calls": [wire_call]}))
    if name == "messages_input_deep":
        blocks = f'[{{"type":"tool_use","id":"t","name":"t","input":{_nested_json(DEPTH)}}}]'
        body = _messages_body([]).replace(b'"content":[]', b'"content":' + blocks.encode())
        return _parse_messages(body)
    if name == "chat_arguments_deep_mapping":
        deep_function = {"name": "t", "arguments": _nested_dict(DEPTH)}
        message = {"role": "assistant", "tool_calls": [{"id": "c", "function": deep_function}]}
        return _parse_chat({"model": "gpt-4o", "choices": [{"message": message}]})
    if name == "messages_input_deep_mapping":
        deep_block = {"type": "tool_use", "id": "t", "name": "t", "input": _nested_dict(DEPTH)}
        return _parse_messages({"model": MODEL, "content": [deep_block], "stop_reason": "tool_use"})
    if name in ("render_arguments_deep_chat", "render_arguments_deep_messages"):
        deep = ToolCall(call_id=mint_call_id(), tool="deep", arguments=_nested_dict(DEPTH))
        return _render_each_way(name.rsplit("_", 1)[1], [UserText(text="go"), deep])
    if name == "render_tool_output_10mb":
        return _render_both(_big_tool_output_log())
    if name == "store_tool_output_10mb":
        return _store_round_trip(_big_tool_output_log())
    raise SystemExit(f"unknown case {name!r}")


CASES = (
    "chat_text_100mb",
    "messages_text_100mb",
    "chat_arguments_100mb",
    "messages_input_100mb",
    "chat_unknown_field_100mb",
    "messages_unknown_field_100mb",
    "chat_garbage_100mb",
    "messages_garbage_100mb",
    "chat_brackets_100mb",
    "messages_brackets_100mb",
    "chat_arguments_deep",
    "messages_input_deep",
    "chat_arguments_deep_mapping",
    "messages_input_deep_mapping",
    "render_arguments_deep_chat",
    "render_arguments_deep_messages",
    "render_tool_output_10mb",
    "store_tool_output_10mb",
)


def _describe(result: object) -> str:
    # Never repr a parsed result: a 10,000-deep argument dict overflows repr's recursion.
    if isinstance(result, Completion):
        return ", ".join(f"{type(event).__name__}" for event in result.events)
    return str(result)


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main(name: str) -> None:
    call = _case(name)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    before = _status_mb("VmRSS")
    start = time.perf_counter()
    try:
        result = call()
        outcome, message = "ok", _describe(result)
    except LLMError as exc:
        outcome, message = type(exc).__name__, str(exc)[:300]
    seconds = time.perf_counter() - start
    report = {
        "case": name,
        "outcome": outcome,
        "message": message,
        "seconds": round(seconds, 3),
        "rss_before_mb": round(before, 1),
        "peak_mb": round(_status_mb("VmHWM"), 1),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
