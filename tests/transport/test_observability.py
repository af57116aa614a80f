"""One log record per call with its facts and no secrets; usage metered once per successful call."""

from __future__ import annotations

import logging

import pytest

from nisse_llm.config.routing import Route
from nisse_llm.errors import LLMError
from nisse_llm.events.canonical import Usage, UserText
from tests.transport.harness import MODEL, ROUTES, TOKEN, make_client
from tests.transport.loopback import TOKEN_MARK, LoopbackServer, Reply, SleepLog, error_body

PROMPT = "Please refactor the billing module (private details here)."
FIELDS = ("route", "model", "status", "attempts", "waited_s", "latency_s", "usage", "error")


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "nisse_llm" and r.levelno == level]


def _all_text(record: logging.LogRecord) -> str:
    return record.getMessage() + repr({name: getattr(record, name, None) for name in FIELDS})


@pytest.mark.parametrize("route", ROUTES)
def test_success_logs_one_info_record(
    route: Route, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A call that succeeds after one 429 logs one INFO record: route, model, status, attempts,
    wait, latency, usage; no token and no message content."""
    caplog.set_level(logging.INFO, logger="nisse_llm")
    server.plan(Reply(429, error_body("slow down", code="429"), headers=(("Retry-After", "7"),)))
    with make_client(route, "sync", server.base_url, sleep=SleepLog()) as client:
        client.complete([UserText(text=PROMPT)], None, MODEL[route])
    (record,) = [r for r in caplog.records if r.name == "nisse_llm"]
    assert record.levelno == logging.INFO
    assert record.__dict__["route"] == route
    assert record.__dict__["model"] == MODEL[route]
    assert record.__dict__["status"] == 200
    assert record.__dict__["attempts"] == 2
    assert record.__dict__["waited_s"] == 7.0
    assert 0 < record.__dict__["latency_s"] < 10
    assert record.__dict__["usage"] == {
        "input": 11,
        "output": len(PROMPT),
        "cache_read": 0,
        "cache_write": 0,
    }
    assert record.__dict__["error"] is None
    assert TOKEN not in _all_text(record)
    assert "billing" not in _all_text(record)


@pytest.mark.parametrize("route", ROUTES)
def test_failure_logs_one_warning_record(
    route: Route, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A rejected call logs one WARNING record naming the error class, the token redacted."""
    caplog.set_level(logging.INFO, logger="nisse_llm")
    server.plan(Reply(401, error_body(f"Invalid key {TOKEN_MARK}", type_="auth_error", code="401")))
    with (
        make_client(route, "sync", server.base_url, sleep=SleepLog()) as client,
        pytest.raises(LLMError),
    ):
        client.complete([UserText(text=PROMPT)], None, MODEL[route])
    (record,) = [r for r in caplog.records if r.name == "nisse_llm"]
    assert record.levelno == logging.WARNING
    assert (record.__dict__["status"], record.__dict__["attempts"]) == (401, 1)
    assert record.__dict__["error"] == "AuthenticationFailed"
    assert record.__dict__["usage"] is None
    assert "[redacted]" in record.getMessage()
    assert TOKEN not in _all_text(record)


@pytest.mark.parametrize("route", ROUTES)
def test_debug_logs_bodies_truncated_and_redacted(
    route: Route, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """At DEBUG the request and response bodies are logged, cut to 2000 characters, token redacted."""
    caplog.set_level(logging.DEBUG, logger="nisse_llm")
    text = f"{TOKEN} " + "y" * 5000
    with make_client(route, "sync", server.base_url, sleep=SleepLog()) as client:
        client.complete([UserText(text=text)], None, MODEL[route])
    debug = _records(caplog, logging.DEBUG)
    assert [r.getMessage().split(" ", 1)[0] for r in debug] == ["request", "response"]
    for record in debug:
        body = record.args[-1]  # type: ignore[index]
        assert isinstance(body, str)
        assert len(body) == 2000
        assert TOKEN not in record.getMessage()
        assert "[redacted]" in body


@pytest.mark.parametrize("route", ROUTES)
def test_usage_callback_once_per_success_never_on_failure(
    route: Route, server: LoopbackServer
) -> None:
    """The callback sees each successful call once (also after a retry), failed calls never;
    last_usage keeps the last success."""
    seen: list[tuple[Usage, str]] = []
    server.plan(Reply(429, error_body("slow down", code="429")), Reply(), Reply(400, b"{}"))
    with make_client(
        route, "sync", server.base_url, sleep=SleepLog(), on_usage=lambda u, m: seen.append((u, m))
    ) as client:
        assert client.last_usage is None
        client.complete([UserText(text="abc")], None, MODEL[route])
        with pytest.raises(LLMError):
            client.complete([UserText(text="abcdef")], None, MODEL[route])
        assert client.last_usage == Usage(input=11, output=3)
    assert seen == [(Usage(input=11, output=3), MODEL[route])]
