"""A failed call's span: status ERROR, ``error.type`` the nisse_llm error class, on both routes."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from nisse_llm import LLMError, UserText
from nisse_llm.testing import (
    Script,
    Turn,
    anthropic_failure,
    cut_after,
    failure,
    openai_failure,
    reply,
    truncated,
)
from tests.telemetry.conftest import Telemetry, attributes
from tests.telemetry.helpers import CALLERS, MODELS, PROVIDERS, Caller, caller_id

_BUDGET = "Budget has been exceeded! Current cost: 1.02, Max budget: 1.0"
_REFUSAL_BODIES = {
    "openai_chat": {
        "id": "chatcmpl-refused",
        "object": "chat.completion",
        "model": MODELS["openai_chat"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
                "finish_reason": "stop",
            }
        ],
    },
    "anthropic_messages": {
        "id": "msg_refused",
        "type": "message",
        "role": "assistant",
        "model": MODELS["anthropic_messages"],
        "content": [],
        "stop_reason": "refusal",
    },
}

# (error class, turn per route, HTTP status the span records or None when nothing was sent)
_FAILURES: list[tuple[str, dict[str, Turn | None], int | None]] = [
    (
        "UpstreamUnavailable",
        {
            "openai_chat": openai_failure(503, "upstream down", type="api_error"),
            "anthropic_messages": anthropic_failure(503, "api_error", "upstream down"),
        },
        503,
    ),
    (
        "BudgetExhausted",
        {
            "openai_chat": openai_failure(429, _BUDGET, type="budget_exceeded"),
            "anthropic_messages": anthropic_failure(429, "budget_exceeded", _BUDGET),
        },
        429,
    ),
    (
        "AuthenticationFailed",
        {
            "openai_chat": openai_failure(
                401, "Authentication Error: invalid proxy token.", type="auth_error"
            ),
            # LiteLLM's auth errors are OpenAI-shaped on /v1/messages too.
            "anthropic_messages": openai_failure(
                401, "Authentication Error - Expired Key.", type="expired_key"
            ),
        },
        401,
    ),
    (
        "ContextWindowExceeded",
        {
            "openai_chat": openai_failure(
                400,
                "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130512 tokens.",
                code="context_length_exceeded",
            ),
            "anthropic_messages": anthropic_failure(
                400, "invalid_request_error", "prompt is too long: 213369 tokens > 200000 maximum"
            ),
        },
        400,
    ),
    (
        "LLMError",
        {
            "openai_chat": openai_failure(400, "messages: bad shape"),
            "anthropic_messages": anthropic_failure(400, "invalid_request_error", "bad shape"),
        },
        400,
    ),
    (
        "TruncatedResponse",
        {route: truncated("half an ans") for route in MODELS},
        200,
    ),
    (
        "ModelRefusal",
        {route: failure(200, body) for route, body in _REFUSAL_BODIES.items()},
        200,
    ),
    ("RenderError", dict.fromkeys(MODELS), None),
]


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
@pytest.mark.parametrize(
    ("error", "turns", "status"), _FAILURES, ids=[name for name, _, _ in _FAILURES]
)
async def test_each_error_class_ends_the_span_in_error(
    otel: Telemetry,
    caller: Caller,
    error: str,
    turns: dict[str, Turn | None],
    status: int | None,
) -> None:
    """The span of a call that raises has status ERROR and ``error.type`` the class raised,
    and its duration point carries the same ``error.type``."""
    turn = turns[caller.route]
    script = Script() if turn is None else Script().add(caller.route, turn)
    log = [] if turn is None else [UserText(text="hi")]  # an empty log cannot be rendered
    with pytest.raises(LLMError) as raised:
        await caller.complete(script, log)
    assert type(raised.value).__name__ == error

    span = otel.span()
    assert span.name == f"chat {caller.model}"
    assert span.status.status_code is StatusCode.ERROR
    seen = attributes(span)
    assert seen["error.type"] == error
    assert seen["gen_ai.provider.name"] == PROVIDERS[caller.route]
    assert seen.get("http.response.status_code") == status
    assert seen["nisse_llm.attempts"] == (0 if turn is None else 1)
    assert "gen_ai.usage.input_tokens" not in seen
    (point,) = otel.points("gen_ai.client.operation.duration")
    assert point.attributes is not None
    assert point.attributes["error.type"] == error
    assert otel.points("gen_ai.client.token.usage") == []


@pytest.mark.parametrize("caller", CALLERS, ids=caller_id)
async def test_a_stream_cut_mid_way_is_stream_interrupted(otel: Telemetry, caller: Caller) -> None:
    """A stream whose connection drops mid-way ends its span as StreamInterrupted, after
    its first chunk was timed."""
    script = Script().add(caller.route, cut_after(reply("a long streamed answer " * 40), 600))
    with pytest.raises(LLMError) as raised:
        await caller.stream(script, [UserText(text="hi")])
    assert type(raised.value).__name__ == "StreamInterrupted"

    seen = attributes(otel.span())
    assert seen["error.type"] == "StreamInterrupted"
    assert seen["gen_ai.request.stream"] is True
    assert seen["gen_ai.response.time_to_first_chunk"] > 0


async def test_the_proxy_call_id_of_a_refused_call_is_recorded(otel: Telemetry) -> None:
    """An error answer's proxy call id is on the span, as it is on the exception."""
    refused = openai_failure(400, "no", headers={"x-litellm-call-id": "call-of-the-refusal"})
    with pytest.raises(LLMError) as raised:
        await Caller("openai_chat", False).complete(Script().chat(refused), [UserText(text="x")])
    assert raised.value.call_id == "call-of-the-refusal"
    assert attributes(otel.span())["nisse_llm.proxy.call_id"] == "call-of-the-refusal"
    assert attributes(otel.span())["error.type"] == "LLMError"
