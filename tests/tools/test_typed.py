"""Typed answers in process: ``complete_as`` on every client and router over the scripted transport."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from nisse_llm import (
    AnthropicPassthroughClient,
    AssistantText,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    AsyncRoleRouter,
    LiteLLMClient,
    OutputValidationError,
    RequestOptions,
    RoleRouter,
    ToolCall,
    ToolResult,
    ToolSpec,
    TypedReply,
    Usage,
    UserText,
    load_settings,
)
from nisse_llm.config.model_rules import UNPLACED
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import CallInfo, Completion
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.typed import ACCEPTED, NOT_RUN, TypedExchange
from nisse_llm.testing import (
    AsyncScriptedClient,
    Script,
    ScriptedClient,
    ScriptedTransport,
    Thinking,
    Tokens,
    ToolUse,
    reply,
)
from tests.render.anthropic_checker import anthropic_violations, official_violations
from tests.render.test_openai_official import judge_official

BASE = "http://proxy.test"


class Plan(BaseModel):
    """A plan of work."""

    steps: list[str] = Field(min_length=1, description="What to do, in order.")
    risk: Literal["low", "high"]


GOOD = {"steps": ["read", "fix"], "risk": "low"}
BAD = {"steps": [], "risk": "medium"}
LOG = [UserText(text="Plan the fix.")]
READ = ToolSpec(name="read_file", parameters={"type": "object", "properties": {}})

# The answer-tool mechanism: Claude on the chat route asks by a tool (the proxy cannot carry
# its native format there), as does a model no rule row places (claude-opus-4-1) on the
# messages route. The native structured answers are `test_typed_native`'s.
ROUTES = {
    "chat": (LiteLLMClient, AsyncLiteLLMClient, "chat", "claude-sonnet-4-6"),
    "messages": (AnthropicPassthroughClient, AsyncAnthropicPassthroughClient, "messages", "claude-opus-4-1"),
}  # fmt: skip


def _script(route: str, *turns: Any) -> Script:
    script = Script()
    return script.chat(*turns) if route == "chat" else script.messages(*turns)


def _answer(arguments: dict[str, Any], output: int = 7) -> Any:
    return reply(ToolUse("Plan", arguments), usage=Tokens(input=100, output=output))


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_valid_answer_is_a_typed_reply(route: str) -> None:
    """The answer tool's arguments validate into the model; the events answer the call."""
    sync_client, _, _, model = ROUTES[route]
    script = _script(route, _answer(GOOD))
    with sync_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(Plan, LOG, [READ], model, "Be brief.")
    assert isinstance(result, TypedReply)
    assert result.value == Plan(steps=["read", "fix"], risk="low")
    assert result.usage == Usage(input=100, output=7)
    assert result.attempts == 1
    call, answered = result.events
    assert isinstance(call, ToolCall)
    assert call.tool == "Plan"
    assert answered == ToolResult(call_id=call.call_id, output=ACCEPTED)
    [request] = script.requests
    assert _tool_names(request.json) == ["read_file", "Plan"]
    forced = (
        {"type": "function", "function": {"name": "Plan"}}
        if route == "chat"
        else {"type": "tool", "name": "Plan"}
    )
    assert request.json["tool_choice"] == forced


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_an_invalid_answer_is_repaired(route: str) -> None:
    """With ``repair_attempts=1`` the errors go back as the call's error result and the
    second answer is taken; both calls' usage is counted."""
    sync_client, _, _, model = ROUTES[route]
    script = _script(route, _answer(BAD, output=5), _answer(GOOD, output=9))
    with sync_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(Plan, LOG, None, model, repair_attempts=1)
    assert result.value.risk == "low"
    assert result.attempts == 2
    assert result.usage == Usage(input=200, output=14)
    first, feedback, second, accepted = result.events
    assert isinstance(first, ToolCall)
    assert isinstance(second, ToolCall)
    assert feedback == ToolResult(
        call_id=first.call_id,
        output=(
            "Invalid arguments for tool 'Plan':\n"
            "- steps: List should have at least 1 item after validation, not 0 (got [])\n"
            "- risk: Input should be 'low' or 'high' (got 'medium')\n"
            "Call 'Plan' again with arguments that match its schema."
        ),
        is_error=True,
    )
    assert accepted == ToolResult(call_id=second.call_id, output=ACCEPTED)
    sent = json.dumps(script.requests[1].json)
    assert "Input should be 'low' or 'high'" in sent


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_invalid_twice_raises_with_raw_errors_and_usage(route: str) -> None:
    """Out of repairs, `OutputValidationError` carries the raw answer, pydantic's errors,
    every attempt's usage and the exchange."""
    sync_client, _, _, model = ROUTES[route]
    script = _script(route, _answer(BAD, output=5), _answer(BAD, output=6))
    with (
        sync_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client,
        pytest.raises(OutputValidationError) as caught,
    ):
        client.complete_as(Plan, LOG, None, model, repair_attempts=1)
    error = caught.value
    assert isinstance(error, LLMError)
    assert json.loads(error.raw) == BAD
    assert [e["loc"] for e in error.errors] == [("steps",), ("risk",)]
    assert error.attempts == 2
    assert error.usage == Usage(input=200, output=11)
    assert len(script.requests) == 2
    assert [type(e).__name__ for e in error.events] == ["ToolCall", "ToolResult"] * 2
    assert "does not validate as Plan after 2 attempt(s)" in str(error)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_no_repair_by_default(route: str) -> None:
    """Without ``repair_attempts`` one invalid answer raises at once."""
    sync_client, _, _, model = ROUTES[route]
    script = _script(route, _answer(BAD))
    with (
        sync_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client,
        pytest.raises(OutputValidationError),
    ):
        client.complete_as(Plan, LOG, None, model)
    assert len(script.requests) == 1


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_text_answer_is_asked_again(route: str) -> None:
    """A reply with no answer call is missing the answer: the repair asks for the tool."""
    sync_client, _, _, model = ROUTES[route]
    script = _script(route, reply("It is low risk."), _answer(GOOD))
    with sync_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(Plan, LOG, None, model, repair_attempts=1)
    text, ask, call, accepted = result.events
    assert isinstance(text, AssistantText)
    assert ask == UserText(
        text="No answer was given: call the 'Plan' tool with your final answer as its arguments."
    )
    assert isinstance(call, ToolCall)
    assert isinstance(accepted, ToolResult)


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_async_clients_complete_as(route: str) -> None:
    """The async twins repair and answer the same way."""
    _, async_client, _, model = ROUTES[route]
    script = _script(route, _answer(BAD), _answer(GOOD))
    async with async_client(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = await client.complete_as(Plan, LOG, None, model, repair_attempts=2)
    assert result.value == Plan(**GOOD)
    assert result.attempts == 2


ROLES: dict[str, Any] = {
    # Pinned to the chat route; the consultant takes its model's default, the Responses route.
    "executor": {"model": "gpt-5.4-mini", "route": "openai_chat"},
    "planner": "claude-sonnet-4-6",
    "delegate": "claude-sonnet-4-6",
    "consultant": "gpt-5.4-mini",
}


def _pin() -> Any:
    return load_settings(llm={"base_url": BASE, "token": "sk-test"}, roles=ROLES).pin()


@pytest.mark.parametrize(
    ("role", "path"),
    [
        ("executor", "/chat/completions"),
        ("planner", "/v1/messages"),
        ("consultant", "/v1/responses"),
    ],
)
def test_routers_complete_as_by_role(role: str, path: str) -> None:
    """`RoleRouter.complete_as(Model, role, ...)` goes down the role's route."""
    script = Script().chat(_answer(GOOD)).messages(_answer(GOOD)).responses(_answer(GOOD))
    with RoleRouter.from_pin(_pin(), transport=ScriptedTransport(script)) as router:
        result = router.complete_as(Plan, role, LOG, None)
    assert result.value == Plan(**GOOD)
    [request] = script.requests
    assert request.path == path
    assert request.json["model"] == _pin().model_for(role)


async def test_async_router_complete_as() -> None:
    """`AsyncRoleRouter.complete_as` awaits the same exchange."""
    script = Script().messages(_answer(BAD), _answer(GOOD))
    async with AsyncRoleRouter.from_pin(_pin(), transport=ScriptedTransport(script)) as router:
        result = await router.complete_as(Plan, "planner", LOG, None, repair_attempts=1)
    assert result.attempts == 2


def test_thinking_on_the_messages_route_offers_the_answer_tool() -> None:
    """For a model asked by a tool (no row places claude-opus-4-1), with reasoning on, the body thinks, leaves the tool choice to the model and asks for
    the answer tool in the system prompt; the reply's thinking stays in the events."""
    script = Script().messages(reply(Thinking("Low risk.", "sig-1"), ToolUse("Plan", GOOD)))
    with AnthropicPassthroughClient(BASE, "sk-test", transport=ScriptedTransport(script)) as client:
        result = client.complete_as(
            Plan,
            LOG,
            None,
            "claude-opus-4-1",
            "Be brief.",
            options=RequestOptions(reasoning=2048),
        )
    assert result.value == Plan(**GOOD)
    assert [type(e).__name__ for e in result.events] == ["Reasoning", "ToolCall", "ToolResult"]
    [request] = script.requests
    body = request.json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    system = json.dumps(body["system"])
    assert "Be brief." in system
    assert "Give your final answer by calling the 'Plan' tool" in system


def test_a_role_profile_with_reasoning_is_honoured_by_the_router() -> None:
    """The router layers the call's options over the role's profile before choosing how to
    ask: a thinking planner gets the offered tool, not a forced one."""
    roles: dict[str, Any] = {**ROLES, "planner": {"model": "claude-opus-4-1", "reasoning": "low"}}
    pin = load_settings(llm={"base_url": BASE, "token": "sk-test"}, roles=roles).pin()
    script = Script().messages(reply(ToolUse("Plan", GOOD)), reply(ToolUse("Plan", GOOD)))
    with RoleRouter.from_pin(pin, transport=ScriptedTransport(script)) as router:
        router.complete_as(Plan, "planner", LOG, None)
        router.complete_as(Plan, "planner", LOG, None, options=RequestOptions(reasoning="off"))
    thinking, plain = (request.json for request in script.requests)
    assert thinking["thinking"]["type"] == "enabled"
    assert thinking.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    assert plain["thinking"] == {"type": "disabled"}
    assert plain["tool_choice"] == {"type": "tool", "name": "Plan"}


def test_the_answer_name_must_not_clash_with_a_tool() -> None:
    """A tool already named like the answer type is refused before anything is sent."""
    clash = ToolSpec(name="Plan", parameters={"type": "object", "properties": {}})
    with pytest.raises(ValueError, match="already named 'Plan'"):
        TypedExchange.begin(
            Plan,
            LOG,
            [clash],
            None,
            options=None,
            repair_attempts=0,
            rules=UNPLACED["openai"],
            route="openai_chat",
        )


# --- the exchange itself (pure) ------------------------------------------------------


def _completion(*events: Any, output: int = 1) -> Completion:
    return Completion(events=list(events), usage=Usage(input=10, output=output))


def _call(arguments: dict[str, Any], tool: str = "Plan", call_id: str = "call_a") -> ToolCall:
    return ToolCall(call_id=call_id, tool=tool, arguments=arguments)


def test_the_answer_tool_is_forced() -> None:
    """The request declares the answer tool last and forces it by name."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        [READ],
        "sys",
        options=RequestOptions(temperature=0.2),
        repair_attempts=0,
        rules=UNPLACED["openai"],
        route="openai_chat",
    )
    assert exchange.mode == "forced"
    assert exchange.options == RequestOptions(temperature=0.2, tool_choice="Plan")
    assert [t.name for t in exchange.tools] == ["read_file", "Plan"]
    assert (
        exchange.tools[1].description
        == "Give your final answer as the arguments of this tool. A plan of work."
    )
    assert exchange.system == "sys"


@pytest.mark.parametrize("reasoning", ["low", 2048])
def test_anthropic_thinking_offers_the_tool_instead_of_forcing_it(reasoning: Any) -> None:
    """Anthropic refuses a forced tool while thinking: ``auto`` plus an instruction instead."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        "sys",
        options=RequestOptions(reasoning=reasoning),
        repair_attempts=0,
        rules=UNPLACED["anthropic"],
        route="anthropic_messages",
    )
    assert exchange.mode == "auto"
    assert exchange.options.tool_choice == "auto"
    assert exchange.options.reasoning == reasoning
    assert exchange.system == (
        "sys\n\nGive your final answer by calling the 'Plan' tool with it as the arguments; "
        "do not answer in text."
    )


@pytest.mark.parametrize(("reasoning", "anthropic"), [("off", True), ("high", False), (None, True)])
def test_other_combinations_force_the_tool(reasoning: Any, anthropic: bool) -> None:
    """Reasoning off, or a model that is not Anthropic's, keeps the forced tool."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        None,
        options=RequestOptions(reasoning=reasoning),
        repair_attempts=0,
        rules=UNPLACED["anthropic" if anthropic else "openai"],
        route="anthropic_messages" if anthropic else "openai_chat",
    )
    assert exchange.options.tool_choice == "Plan"


def test_unforced_text_json_is_accepted() -> None:
    """When the tool could not be forced, a JSON answer in text (fenced or not) is taken."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        None,
        options=RequestOptions(reasoning="high"),
        repair_attempts=0,
        rules=UNPLACED["anthropic"],
        route="anthropic_messages",
    )
    text = AssistantText(text='```json\n{"steps": ["a"], "risk": "high"}\n```', model="m")
    result = exchange.settle(_completion(text))
    assert result is not None
    assert result.value == Plan(steps=["a"], risk="high")
    assert result.events == [text]


def test_forced_text_json_is_not_accepted() -> None:
    """With the tool forced, text is never read as the answer."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        None,
        options=None,
        repair_attempts=0,
        rules=UNPLACED["openai"],
        route="openai_chat",
    )
    with pytest.raises(OutputValidationError) as caught:
        exchange.settle(_completion(AssistantText(text=json.dumps(GOOD), model="m")))
    assert caught.value.raw == json.dumps(GOOD)
    assert caught.value.errors[0]["type"] == "missing"


def test_other_tool_calls_are_answered_not_run() -> None:
    """Calls to other tools beside the answer are answered as not run, so the log stays whole."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        [READ],
        None,
        options=RequestOptions(reasoning="high"),
        repair_attempts=0,
        rules=UNPLACED["anthropic"],
        route="anthropic_messages",
    )
    other = _call({}, tool="read_file", call_id="call_r")
    answer = _call(GOOD)
    result = exchange.settle(_completion(other, answer))
    assert result is not None
    assert result.events[2:] == [
        ToolResult(call_id="call_r", output=NOT_RUN, is_error=True),
        ToolResult(call_id="call_a", output=ACCEPTED),
    ]


def test_the_next_attempt_sends_the_exchange_so_far() -> None:
    """After a failed attempt, the log to send is the caller's events, the reply, the feedback."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        None,
        options=None,
        repair_attempts=1,
        rules=UNPLACED["openai"],
        route="openai_chat",
    )
    assert exchange.settle(_completion(_call(BAD))) is None
    log = exchange.log
    assert log[0] == LOG[0]
    assert log[1] == _call(BAD)
    assert isinstance(log[2], ToolResult)
    assert log[2].is_error


def test_negative_repairs_are_refused() -> None:
    """``repair_attempts`` counts extra asks: it cannot be negative."""
    with pytest.raises(ValueError, match="0 or more"):
        TypedExchange.begin(
            Plan,
            LOG,
            None,
            None,
            options=None,
            repair_attempts=-1,
            rules=UNPLACED["openai"],
            route="openai_chat",
        )


# --- the scripted client -------------------------------------------------------------


def test_scripted_client_complete_as_repairs_like_a_real_client() -> None:
    """`ScriptedClient.complete_as` declares the answer tool, sends the errors back and
    sums the scripted usage, so an agent's unit tests see what a real client does."""
    client = ScriptedClient(
        [
            reply(ToolUse("Plan", BAD), usage=Tokens(input=10, output=2)),
            reply(ToolUse("Plan", GOOD), usage=Tokens(input=20, output=3)),
        ]
    )
    result = client.complete_as(Plan, LOG, [READ], "gpt-x", repair_attempts=1)
    assert result.value == Plan(**GOOD)
    assert result.usage == Usage(input=30, output=5)
    first, second = client.calls
    assert [t.name for t in first.tools] == ["read_file", "Plan"]
    feedback = second.events[-1]
    assert isinstance(feedback, ToolResult)
    assert feedback.is_error
    assert "- risk: Input should be 'low' or 'high' (got 'medium')" in feedback.output


async def test_async_scripted_client_complete_as_raises_when_out_of_repairs() -> None:
    """`AsyncScriptedClient.complete_as` raises `OutputValidationError` like a real client."""
    client = AsyncScriptedClient([reply(ToolUse("Plan", BAD))])
    with pytest.raises(OutputValidationError) as caught:
        await client.complete_as(Plan, LOG, None, "claude-sonnet-4-6")
    assert json.loads(caught.value.raw) == BAD


def test_the_logs_earlier_calls_are_declared_when_their_tools_are_not_passed() -> None:
    """Asking for an answer after tool turns, with no tools passed, declares the log's
    called tools as stubs beside the answer tool, and the bodies pass the official judges."""
    call = ToolCall(call_id="call_r", tool="read_file", arguments={"path": "a.py"})
    log = [*LOG, call, ToolResult(call_id="call_r", output="x = 1")]
    exchange = TypedExchange.begin(
        Plan,
        log,
        None,
        None,
        options=None,
        repair_attempts=0,
        rules=UNPLACED["openai"],
        route="openai_chat",
    )
    assert [t.name for t in exchange.tools] == ["read_file", "Plan"]
    assert exchange.tools[0].description.startswith("Not offered in this request")
    chat = OpenAIChatRenderer().render(
        exchange.log, exchange.tools, "gpt-5.4-mini", options=exchange.options
    )
    judge_official(chat)
    messages = AnthropicMessagesRenderer().render(
        exchange.log, exchange.tools, "claude-sonnet-4-6", options=exchange.options
    )
    assert official_violations(messages) == []
    assert anthropic_violations(messages) == []


def test_a_typed_reply_keeps_each_attempts_call_info() -> None:
    """A repaired answer's reply names both attempts' calls, so the cost of the whole
    answer (what a task's run counts) is the sum over them, not the last call's."""
    exchange = TypedExchange.begin(
        Plan,
        LOG,
        None,
        None,
        options=None,
        repair_attempts=1,
        rules=UNPLACED["openai"],
        route="openai_chat",
    )
    first = _completion(_call(BAD)).model_copy(
        update={"call": CallInfo(call_id="c1", cost_usd=Decimal("0.0002"))}
    )
    second = _completion(_call(GOOD, call_id="call_b")).model_copy(
        update={"call": CallInfo(call_id="c2", cost_usd=Decimal("0.0003"))}
    )
    assert exchange.settle(first) is None
    answer = exchange.settle(second)
    assert answer is not None
    assert [c.call_id for c in answer.calls] == ["c1", "c2"]
    assert sum(c.cost_usd or 0 for c in answer.calls) == Decimal("0.0005")
