"""A tool loop's spans: model calls by role in the task's conversation, and tool runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from nisse_llm import (
    AsyncFileTaskStore,
    AsyncRoleRouter,
    FileTaskStore,
    RoleRouter,
    TaskStore,
    Toolbox,
    ToolCall,
    UserText,
    load_settings,
)
from nisse_llm.config.settings import Pin
from nisse_llm.testing import Script, ScriptedTransport, ToolUse, reply
from tests.telemetry.conftest import Telemetry, attributes
from tests.telemetry.helpers import BASE, MODELS, TOKEN

# The OpenAI roles are pinned to the chat route (their model's default is the Responses route).
ROLES = {
    "executor": {"model": MODELS["openai_chat"], "route": "openai_chat"},
    "planner": MODELS["anthropic_messages"],
    "delegate": {"model": MODELS["openai_chat"], "route": "openai_chat"},
    "consultant": MODELS["anthropic_messages"],
}


def _pin() -> Pin:
    return load_settings(llm={"base_url": BASE, "token": TOKEN}, roles=ROLES).pin()


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def fail_loudly(reason: str) -> str:
    """A tool that raises."""
    raise ValueError(reason)


#: A role on each route: the executor's model takes the chat route, the planner's messages.
LOOP_ROLES = {"executor": "openai_chat", "planner": "anthropic_messages"}


def _script(role: str) -> Script:
    return Script().add(
        LOOP_ROLES[role],
        reply("Reading.", ToolUse("read_file", {"path": "a.py"})),
        reply("Done."),
    )


def _check_loop(otel: Telemetry, store: TaskStore, role: str) -> None:
    spans = otel.spans()
    names = [span.name for span in spans]
    assert names == [
        f"chat {_pin().model_for(role)}",
        "execute_tool read_file",
        f"chat {_pin().model_for(role)}",
        "invoke_agent coder",
    ]
    first, tool, second, agent = spans
    agent_id = agent.get_span_context().span_id
    assert all(span.parent is not None and span.parent.span_id == agent_id for span in spans[:3])
    for call in (first, second):
        seen = attributes(call)
        assert seen["nisse_llm.role"] == role
        assert seen["nisse_llm.route"] == LOOP_ROLES[role]
        assert seen["gen_ai.conversation.id"] == store.task_id
    assert store.task_id is not None
    assert store.task_id.startswith("task_")
    assert tool.kind is SpanKind.INTERNAL
    assert tool.status.status_code is StatusCode.UNSET
    assert attributes(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "read_file",
        "gen_ai.tool.call.id": _tool_call_id(store),
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Read a file.",
    }


def _tool_call_id(store: TaskStore) -> str:
    (call,) = [event for event in store.read().events if isinstance(event.event, ToolCall)]
    assert isinstance(call.event, ToolCall)
    return call.event.call_id


@pytest.mark.parametrize("role", LOOP_ROLES)
def test_a_sync_tool_loop_nests_calls_and_tools_under_the_agent(
    otel: Telemetry, tmp_path: Path, role: str
) -> None:
    """A router with a task file and a toolbox give chat, execute_tool, chat spans, each
    the agent span's child, the calls in the task's conversation with their role."""
    pin = _pin()
    store = FileTaskStore(tmp_path / "task.jsonl")
    tools = Toolbox([read_file])
    tracer = otel.tracer_provider.get_tracer("agent")
    with (
        tracer.start_as_current_span("invoke_agent coder"),
        RoleRouter.from_pin(pin, store=store, transport=ScriptedTransport(_script(role))) as llm,
    ):
        log = [store.append_event(UserText(text="Fix it.")).event]
        reply_events = llm.complete(role, log, tools.specs)
        results = tools.run(reply_events)
        store.append_events(reply_events + results)
        llm.complete(role, log + reply_events + results, tools.specs)
    _check_loop(otel, store, role)


@pytest.mark.parametrize("role", LOOP_ROLES)
async def test_an_async_tool_loop_nests_calls_and_tools_under_the_agent(
    otel: Telemetry, tmp_path: Path, role: str
) -> None:
    """The async router and `arun` give the same spans as their sync twins."""
    pin = _pin()
    store = AsyncFileTaskStore(tmp_path / "task.jsonl")
    tools = Toolbox([read_file])
    tracer = otel.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent coder"):
        async with AsyncRoleRouter.from_pin(
            pin, store=store, transport=ScriptedTransport(_script(role))
        ) as llm:
            await llm.begin_task()  # the header, before the first event
            log = [(await store.append_event(UserText(text="Fix it."))).event]
            reply_events = await llm.complete(role, log, tools.specs)
            results = await tools.arun(reply_events)
            await store.append_events(reply_events + results)
            await llm.complete(role, log + reply_events + results, tools.specs)
    _check_loop(otel, FileTaskStore(store.path).begin(pin), role)


def test_a_resumed_task_keeps_its_conversation_id(otel: Telemetry, tmp_path: Path) -> None:
    """The conversation id is the task's: the same after the file is resumed."""
    pin = _pin()
    path = tmp_path / "task.jsonl"
    first = FileTaskStore(path).begin(pin).task_id
    task = FileTaskStore(path).resume(TOKEN, base_url=BASE)
    script = Script().chat(reply("ok"))
    with RoleRouter.from_pin(
        task.pin, store=task.store, transport=ScriptedTransport(script)
    ) as llm:
        llm.complete("executor", [UserText(text="go on")], None)
    assert first is not None
    assert attributes(otel.span())["gen_ai.conversation.id"] == first
    assert FileTaskStore(tmp_path / "other.jsonl").begin(pin).task_id != first


def _tool_span(otel: Telemetry) -> ReadableSpan:
    (span,) = [s for s in otel.spans() if s.name.startswith("execute_tool")]
    return span


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "arun"])
@pytest.mark.parametrize(
    ("call", "error_type"),
    [
        (ToolCall(call_id="call_1", tool="fail_loudly", arguments={"reason": "no"}), "ValueError"),
        (ToolCall(call_id="call_2", tool="read_file", arguments={"path": 3}), "invalid_arguments"),
        (ToolCall(call_id="call_3", tool="rm_rf", arguments={}), "unknown_tool"),
    ],
    ids=["raises", "bad-arguments", "unknown"],
)
async def test_a_failed_tool_run_ends_its_span_in_error(
    otel: Telemetry, asynchronous: bool, call: ToolCall, error_type: str
) -> None:
    """A tool that raises, gets bad arguments or does not exist: an error result for the
    model, and a span in error naming what failed."""
    tools = Toolbox([read_file, fail_loudly])
    results = await tools.arun([call]) if asynchronous else tools.run([call])
    assert results[0].is_error
    span = _tool_span(otel)
    assert span.name == f"execute_tool {call.tool}"
    assert span.status.status_code is StatusCode.ERROR
    assert attributes(span)["error.type"] == error_type
    assert attributes(span)["gen_ai.tool.call.id"] == call.call_id


def test_a_propagated_tool_error_is_recorded_on_its_span(otel: Telemetry) -> None:
    """With propagate_errors the exception reaches the caller and is recorded on the span."""
    tools = Toolbox([fail_loudly], propagate_errors=True)
    with pytest.raises(ValueError, match="boom"):
        tools.run([ToolCall(call_id="call_p", tool="fail_loudly", arguments={"reason": "boom"})])
    span = _tool_span(otel)
    assert span.status.status_code is StatusCode.ERROR
    assert attributes(span)["error.type"] == "ValueError"
    assert [event.name for event in span.events] == ["exception"]
