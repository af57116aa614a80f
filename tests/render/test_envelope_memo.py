"""Each renderer keeps the body around its messages (model, system, tools, option fields)
from call to call: what it reuses must be what it would have built afresh.

One renderer renders a growing log through a sequence of calls that change one thing at
a time; every body must equal the typed request's dump (built without the memo).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from nisse_llm import RequestOptions
from nisse_llm.events.canonical import (
    AssistantText,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserText,
)
from nisse_llm.render._cache import PromptCache
from nisse_llm.render.anthropic_messages import AnthropicMessagesRenderer
from nisse_llm.render.openai_chat import OpenAIChatRenderer
from nisse_llm.render.openai_responses import OpenAIResponsesRenderer

READ = ToolSpec(name="read", description="Read a file.", parameters={"type": "object"})
READ_AGAIN = ToolSpec(name="read", description="Read a file, again.", parameters={})
GREP = ToolSpec(name="grep", description="Search.", parameters={"type": "object"})

ROUTES = {
    "openai_chat": (OpenAIChatRenderer, "gpt-5-mini"),
    "anthropic_messages": (AnthropicMessagesRenderer, "claude-sonnet-4-5"),
    "openai_responses": (OpenAIResponsesRenderer, "gpt-5-mini"),
}


def _turn(n: int, tool: str = "read") -> list[Any]:
    return [
        UserText(text=f"Step {n}."),
        AssistantText(text=f"Doing {n}.", model="m"),
        ToolCall(call_id=f"c{n}-{tool}", tool=tool, arguments={"n": n}),
        ToolResult(call_id=f"c{n}-{tool}", output=f"out {n}"),
    ]


def _typed(renderer: Any, *args: Any, **kwargs: Any) -> bytes:
    dumped: bytes = (
        renderer.render_request(*args, **kwargs).model_dump_json(exclude_none=True).encode()
    )
    return dumped


# Each step: (turns to add, tools, system, options, cache, extra keywords).
_STEPS: list[tuple[int, Any, str | None, RequestOptions | None, bool, dict[str, Any]]] = [
    (1, [READ], "Be brief.", None, False, {}),
    (1, [READ], "Be brief.", None, False, {}),  # the same envelope again
    (0, [READ], "Be thorough.", None, False, {}),  # another system prompt
    (1, [READ_AGAIN], "Be thorough.", None, False, {}),  # same name, another spec
    (0, [READ_AGAIN, GREP], "Be thorough.", None, False, {}),  # one tool more
    (1, [READ_AGAIN, GREP], None, RequestOptions(max_output_tokens=123), False, {}),
    (0, [READ_AGAIN, GREP], None, RequestOptions(max_output_tokens=456), False, {}),
    (1, [READ_AGAIN, GREP], None, RequestOptions(tool_choice="required"), False, {}),
    (0, None, None, None, False, {}),  # no tools passed: the log's calls get stubs
    (1, None, None, None, True, {}),  # prompt caching on
    (0, [READ], "Be brief.", None, True, {}),
    (0, [READ], "Be brief.", None, False, {}),
]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kept_envelope_is_the_one_built_afresh(route: str) -> None:
    make, model = ROUTES[route]
    renderer = make()
    log: list[Any] = []
    for turns, tools, system, options, cached, extra in _STEPS:
        for _ in range(turns):
            log = log + _turn(len(log))
        cache = PromptCache() if cached else None
        kwargs = {"max_tokens": 1000, "cache": cache, "options": options, **extra}
        got = renderer.render_bytes(log, tools, model, system, **kwargs)
        assert got == _typed(make(), log, tools, model, system, **kwargs)


def test_the_responses_envelope_follows_the_task_and_its_cache_key() -> None:
    """The Responses route's default cache key is made from the log's first event: a log
    that starts anew gets a new key, a key passed wins, and one passed later is not kept."""
    renderer = OpenAIResponsesRenderer()
    model = "gpt-5-mini"

    def key(log: list[Any], **kwargs: Any) -> Any:
        body = renderer.render(log, [READ], model, "Be brief.", **kwargs)
        assert renderer.render_bytes(log, [READ], model, "Be brief.", **kwargs) == _typed(
            OpenAIResponsesRenderer(), log, [READ], model, "Be brief.", **kwargs
        )
        return body["prompt_cache_key"]

    first = _turn(0)
    task = key(first)
    assert key(first + _turn(1)) == task
    other = key(_turn(5))
    assert other != task
    assert key(first + _turn(1), prompt_cache_key="mine") == "mine"
    assert key(first + _turn(1) + _turn(2)) == task


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_forget_lets_go_of_the_logs_and_tools_rendered(route: str) -> None:
    """A renderer told to forget holds none of the events or tool specs it rendered: its
    envelopes held a log's first event and the specs, by identity, until then."""
    make, model = ROUTES[route]
    renderer = make()
    log = _turn(0)
    spec = ToolSpec(name="read", description="Read a file.", parameters={"type": "object"})
    renderer.render_bytes(log, [spec], model, "Be brief.", max_tokens=1000)
    first, tool = weakref.ref(log[0]), weakref.ref(spec)
    del log, spec
    gc.collect()
    assert first() is not None, "the envelope memo keeps what it compares by identity"
    renderer.forget()
    gc.collect()
    assert first() is None
    assert tool() is None
    again = _turn(0)
    body = renderer.render_bytes(again, [READ], model, "Be brief.", max_tokens=1000)
    assert body == _typed(make(), again, [READ], model, "Be brief.", max_tokens=1000)
