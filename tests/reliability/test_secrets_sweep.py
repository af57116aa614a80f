"""One sweep of every user-visible output for the proxy token: errors, reprs, logs, CLI.

The servers here echo the token in every error body and in response headers; the sweep
fails if the token shows up in any exception text, attribute or traceback, any repr or
str of an object holding settings, a pin record, any log record at any level (message,
args and every extra attribute), or anything a CLI subcommand prints.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.cli.main import main
from nisse_llm.config.routing import Route
from nisse_llm.config.settings import InsecureConfigFileWarning, Pin, load_settings
from nisse_llm.errors import ConfigError, LLMError, UpstreamUnavailable
from nisse_llm.testing.sse import encode_sse, sse_stream, stream_events, with_error_event
from nisse_llm.transport.clients import (
    AnthropicPassthroughClient,
    AsyncAnthropicPassthroughClient,
    AsyncLiteLLMClient,
    LiteLLMClient,
)
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.reliability import figures
from tests.reliability._rawserver import ECHO_PLACES, Conn, RawServer, whole
from tests.reliability._rawserver import echo as _echo
from tests.reliability._rawserver import head as raw_head
from tests.transport.harness import (
    EVENTS,
    MODEL,
    MODES,
    ROUTES,
    TOKEN,
    Mode,
    close,
    complete,
    make_client,
)
from tests.transport.loopback import (
    RESPONSES,
    TOKEN_MARK,
    LoopbackServer,
    PerRoute,
    Plan,
    Reply,
    Reset,
    SleepLog,
    closed_port_url,
    error_body,
    fixture_body,
    serve,
)
from tests.transport.stream_harness import read_stream
from tests.transport.stream_upstream import Body, Raw, StreamingUpstream
from tests.transport.stream_upstream import serve as serve_streaming

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
# The server names the caller's key in headers too, as some gateways do in WWW-Authenticate,
# and in the proxy's call-metadata headers, which end up on CallInfo and LLMError.call_id.
CALL_HEADERS = (
    ("x-litellm-call-id", f"call-{TOKEN}"),
    ("x-litellm-model-group", TOKEN),
    ("x-litellm-model-id", f"id-{TOKEN}"),
    ("x-litellm-response-cost", "0.5"),
)
ECHO_HEADERS = (
    ("www-authenticate", f'Bearer realm="proxy", key="{TOKEN}"'),
    ("x-key", TOKEN),
    *CALL_HEADERS,
)
HTML_502 = f"<html><body><h1>502 Bad Gateway</h1><!-- key {TOKEN_MARK} --></body></html>".encode()


def _both(chat: str, messages: str) -> PerRoute:
    return PerRoute(fixture_body(chat, echo_token=True), fixture_body(messages, echo_token=True))


def _raw(chat: str, messages: str) -> PerRoute:
    return PerRoute((RESPONSES / chat).read_bytes(), (RESPONSES / messages).read_bytes())


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour; ``echoed`` when the token is in its body (so must be redacted)."""

    plans: tuple[Plan, ...]
    echoed: bool = True
    refused: bool = False


def _reply(status: int, body: bytes | PerRoute, **options: Any) -> Reply:
    return Reply(status, body, headers=ECHO_HEADERS, **options)


FAULTS: dict[str, Fault] = {
    "400": Fault(
        (
            _reply(
                400,
                _both(
                    "oai_error_400_unsupported_value.json", "ant_error_400_orphan_tool_result.json"
                ),
            ),
        )
    ),
    "400-token-in-type": Fault(
        (_reply(400, error_body(f"bad request {TOKEN_MARK}", type_=TOKEN_MARK)),)
    ),
    "401": Fault(
        (
            _reply(
                401,
                error_body(
                    f"Authentication Error, Invalid proxy server token passed. Received API Key = {TOKEN_MARK}",
                    type_="auth_error",
                    code="401",
                ),
            ),
        )
    ),
    "404": Fault(
        (_reply(404, _both("oai_error_404_model_not_found.json", "ant_error_404_not_found.json")),)
    ),
    "422": Fault((_reply(422, error_body(f"Unprocessable: key {TOKEN_MARK}", code="422")),)),
    "429-twice": Fault(
        (
            _reply(429, fixture_body("litellm_error_429_rate_limit.json", echo_token=True)),
            _reply(429, fixture_body("litellm_error_429_rate_limit.json", echo_token=True)),
        )
    ),
    "500": Fault(
        (_reply(500, error_body(f"litellm.APIConnectionError key={TOKEN_MARK}", code="500")),)
    ),
    "502-html": Fault((_reply(502, HTML_502, content_type="text/html"),)),
    "503": Fault((_reply(503, error_body(f"Service Unavailable {TOKEN_MARK}", code="503")),)),
    "budget-400": Fault(
        (_reply(400, error_body(f"Budget has been exceeded! Key={TOKEN_MARK} Max budget: 2.5")),)
    ),
    "budget-422": Fault(
        (_reply(422, error_body(f"ExceededBudget: Key over 1d budget. Key={TOKEN_MARK}")),)
    ),
    "budget-429-type": Fault(
        (_reply(429, fixture_body("litellm_error_429_budget_exceeded.json", echo_token=True)),)
    ),
    "200-malformed": Fault(
        (_reply(200, f'{{"id": "x", "note": "{TOKEN_MARK}"}}'.encode()),), echoed=False
    ),
    "200-token-in-a-typed-field": Fault(
        (
            _reply(
                200,
                PerRoute(
                    f'{{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": "{TOKEN_MARK}"}}'.encode(),
                    f'{{"id": "m", "type": "message", "role": "assistant", "model": "m", "content": "{TOKEN_MARK}", "stop_reason": "end_turn", "usage": {{"input_tokens": 1, "output_tokens": 1}}}}'.encode(),
                ),
            ),
        ),
        echoed=False,
    ),
    "200-truncated-json": Fault(
        (_reply(200, f'{{"id": "{TOKEN_MARK}", "choices": [{{'.encode()),), echoed=False
    ),
    "200-truncation": Fault(
        (_reply(200, _raw("oai_finish_length.json", "ant_max_tokens_haiku_probe.json")),),
        echoed=False,
    ),
    "reset": Fault((Reset(),), echoed=False),
    "connection-refused": Fault((), echoed=False, refused=True),
}


# --- the sweep itself ---------------------------------------------------------------------


def _exception_texts(exc: BaseException) -> list[str]:
    texts = [str(exc), repr(exc), *(repr(a) for a in exc.args)]
    texts += [repr(v) for v in vars(exc).values()]  # status, error_type, server_message, ...
    texts.append("".join(traceback.format_exception(exc)))  # the cause chain as printed
    return texts


def _record_texts(record: logging.LogRecord) -> list[str]:
    texts = [record.getMessage(), repr(record.args)]
    texts += [f"{k}={v!r}" for k, v in vars(record).items()]  # every extra attribute
    return texts


def _assert_clean(texts: list[str], where: str) -> None:
    for text in texts:
        assert TOKEN not in text, f"{where}: {text[:300]}"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback proxy stand-in that echoes the caller's token where told."""
    yield from serve()


@pytest.fixture
def streaming() -> Iterator[StreamingUpstream]:
    """A loopback upstream that streams server-sent events when asked."""
    yield from serve_streaming()


async def _call(client: Any, kind: str) -> None:
    if kind == "stream":
        await read_stream(client)
    else:
        await complete(client, EVENTS, None, MODEL[client.route])


@pytest.mark.parametrize("kind", ["complete", "stream"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(FAULTS))
async def test_fault_table_errors_and_logs_never_carry_the_token(
    name: str,
    route: Route,
    mode: Mode,
    kind: str,
    server: LoopbackServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every fault row, both routes, sync and async, complete() and stream(): the exception
    (str, repr, args, attributes, traceback) and every DEBUG-and-up log record lack the token."""
    caplog.set_level(logging.DEBUG, logger="nisse_llm")
    fault = FAULTS[name]
    server.plan(*fault.plans)
    base_url = closed_port_url() if fault.refused else server.base_url
    client = make_client(route, mode, base_url, sleep=SleepLog())
    try:
        with pytest.raises(LLMError) as caught:
            await _call(client, kind)
    finally:
        await close(client)
    texts = _exception_texts(caught.value)
    _assert_clean(texts, f"{name} exception")
    if fault.echoed:
        assert any("[redacted]" in text for text in texts)  # the echo did arrive, redacted
    records = [r for r in caplog.records if r.name == "nisse_llm"]
    assert {r.levelno for r in records} >= {logging.DEBUG, logging.WARNING}
    for record in records:
        _assert_clean(_record_texts(record), f"{name} log record")


def _mid_stream(route: Route, name: str) -> Raw:
    """A stream that breaks after some text: with an error event, a reset, a stall or a bad chunk."""
    if route == "openai_responses":
        recorded = RESPONSES.parent.parent / "responses" / "vercel_gpt_6_sol_text.json"
        body = json.loads(recorded.read_text())
    else:
        body = json.loads((RESPONSES / f"{_PLAIN[route]}.json").read_text())
    if name == "error-event":
        events = with_error_event(
            route,
            stream_events(route, body),
            after=4,
            error_type=TOKEN,
            message=f"Overloaded, key {TOKEN}",
        )
        return Raw(encode_sse(events))
    data = sse_stream(route, body)
    head = data[: data.index(b"\n\n", len(data) // 3) + 2]
    if name == "cut":
        return Raw(head, end="cut")
    if name == "stall":
        return Raw(head, end="stall", stall_s=3.0)
    if route == "openai_chat":
        chunk = f'data: {{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": "{TOKEN}"}}\n\n'
    elif route == "openai_responses":
        chunk = f'data: {{"type": "response.output_text.delta", "output_index": "{TOKEN}", "delta": "{TOKEN}"}}\n\n'
    else:
        chunk = f'event: content_block_delta\ndata: {{"type": "content_block_delta", "index": "{TOKEN}", "delta": {{"type": "text_delta", "text": "{TOKEN}"}}}}\n\n'
    return Raw(head + chunk.encode())


_PLAIN = {"openai_chat": "oai_text_plain", "anthropic_messages": "ant_text_plain"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", ["error-event", "cut", "stall", "bad-chunk"])
async def test_streams_broken_mid_way_never_carry_the_token(
    name: str,
    route: Route,
    mode: Mode,
    streaming: StreamingUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stream that breaks after some text (an error event naming the token, a reset, a
    stall, a chunk with the token in a typed field) raises an error whose text, attributes,
    partial reply and traceback lack the token, as do the DEBUG-and-up log records."""
    caplog.set_level(logging.DEBUG, logger="nisse_llm")
    streaming.plan(_mid_stream(route, name))
    client = make_client(
        route, mode, streaming.base_url, sleep=SleepLog(), stream_idle_timeout_s=0.5
    )
    try:
        with pytest.raises(LLMError) as caught:
            await read_stream(client)
    finally:
        await close(client)
    texts = _exception_texts(caught.value)
    _assert_clean(texts, f"{name} exception")
    if name == "error-event":
        assert caught.value.error_type == "[redacted]"
    for record in caplog.records:
        _assert_clean(_record_texts(record), f"{name} log record")


# --- call metadata and the limits endpoints ----------------------------------------------------


@pytest.mark.parametrize("kind", ["complete", "stream"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
async def test_call_metadata_headers_echoing_the_token_never_show_it(
    route: Route, mode: Mode, kind: str, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A successful reply whose call-id, model-group and model-id headers carry the token:
    last_call, the completion, the usage callback's CallInfo and every log record lack it."""
    caplog.set_level(logging.DEBUG, logger="nisse_llm")
    server.plan(Reply(headers=ECHO_HEADERS))
    seen: list[Any] = []

    def on_usage(usage: Any, model: str, **extra: Any) -> None:
        seen.append(extra)

    client = make_client(route, mode, server.base_url, sleep=SleepLog(), on_usage=on_usage)
    try:
        if kind == "stream":
            _, completion = await read_stream(client)
            texts = [repr(completion), completion.model_dump_json()]
        else:
            await complete(client, EVENTS, None, MODEL[route])
            texts = []
    finally:
        await close(client)
    texts += [repr(client.last_call), repr(seen)]
    assert client.last_call is not None
    assert client.last_call.call_id == "call-[redacted]"
    _assert_clean(texts, "call info")
    for record in caplog.records:
        _assert_clean(_record_texts(record), "call info log record")


# Both clients' models listed with a 5-token window: any request must be counted first.
_LISTED = _reply(
    200,
    json.dumps(
        {"data": [{"model_name": m, "model_info": {"max_input_tokens": 5}} for m in MODEL.values()]}
    ).encode(),
)
LIMIT_FAULTS: dict[str, tuple[Plan, ...]] = {
    "model-info-401": (
        _reply(401, error_body(f"Invalid key {TOKEN_MARK}", type_="auth_error", code="401")),
    ),
    "model-info-500": (_reply(500, error_body(f"down {TOKEN_MARK}", code="500")),),
    "model-info-garbage": (_reply(200, f'{{"data": "{TOKEN_MARK}"'.encode()),),
    "counter-401": (
        _LISTED,
        _reply(401, error_body(f"Invalid key {TOKEN_MARK}", type_="auth_error", code="401")),
    ),
    "counter-garbage": (_LISTED, _reply(200, f'{{"total_tokens": "{TOKEN_MARK}"}}'.encode())),
    "counter-reset": (_LISTED, Reset()),
    "preflight-refusal": (_LISTED, _reply(200, b'{"total_tokens": 50}')),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(LIMIT_FAULTS))
async def test_model_info_counter_and_preflight_failures_never_carry_the_token(
    name: str, route: Route, mode: Mode, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """GET /v1/model/info and POST /utils/token_counter answering with the token in bodies and
    headers (refusals, garbage, resets), and a pre-flight refusal: the exception and every log
    record lack it."""
    caplog.set_level(logging.DEBUG, logger="nisse_llm")
    server.plan(*LIMIT_FAULTS[name])
    client = make_client(route, mode, server.base_url, sleep=SleepLog(), preflight=True)
    try:
        with pytest.raises(LLMError) as caught:
            await complete(client, EVENTS, None, MODEL[route])
    finally:
        await close(client)
    _assert_clean(_exception_texts(caught.value), f"{name} exception")
    for record in caplog.records:
        _assert_clean(_record_texts(record), f"{name} log record")
    assert [r.path for r in server.requests if r.method == "POST"] in (
        [],
        ["/utils/token_counter"],
    )  # the completion itself was never sent


# --- objects holding settings ---------------------------------------------------------------

ROLES = {
    "executor": "claude-sonnet-4-5",
    "planner": "openai/gpt-5",
    "delegate": "claude-opus-4-1",
    "consultant": "openai/gpt-5-mini",
}


def _toml(base_url: str, *, token: bool = True) -> str:
    lines = ["[llm]", f'base_url = "{base_url}"']
    if token:
        lines.append(f'token = "{TOKEN}"')
    lines.append("[roles]")
    lines += [f'{role} = "{model}"' for role, model in ROLES.items()]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


async def test_reprs_of_every_object_holding_settings_hide_the_token(tmp_path: Path) -> None:
    """repr and str of settings, their tables, the pin, its roles and record, every client,
    both routers and both streams never show the token."""
    settings = load_settings(_write(tmp_path / "c.toml", _toml("http://127.0.0.1:9")))
    pin = settings.pin()
    shown: list[Any] = [settings, settings.llm, settings.roles, pin, pin.roles, pin.record()]
    texts = [json.dumps(pin.record()), pin.model_dump_json(), settings.model_dump_json()]
    sync_router = RoleRouter.from_pin(pin)
    async_router = AsyncRoleRouter.from_pin(pin)
    clients: list[Any] = [
        LiteLLMClient.from_pin(pin),
        AnthropicPassthroughClient.from_pin(pin),
        AsyncLiteLLMClient.from_pin(pin),
        AsyncAnthropicPassthroughClient.from_pin(pin),
    ]
    try:
        streams = [sync_router.stream("planner", EVENTS, None)]
        streams.append(async_router.stream("executor", EVENTS, None))
        shown += [sync_router, async_router, *clients, *streams]
        shown += [sync_router.client_for(r) for r in ROLES]
        shown += [async_router.client_for(r) for r in ROLES]
        texts += [text for obj in shown for text in (repr(obj), str(obj))]
    finally:
        sync_router.close()
        await async_router.aclose()
        for client in clients:
            await close(client)
    assert len(texts) > 30
    _assert_clean(texts, "repr")


# --- CLI ----------------------------------------------------------------------------------


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureConfigFileWarning)
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("source", ["toml", "env"])
def test_cli_output_of_every_subcommand_never_shows_the_token(
    source: str,
    tmp_path: Path,
    server: LoopbackServer,
    streaming: StreamingUpstream,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every subcommand, succeeding or failing, with the token from TOML or from the
    environment, prints nothing on stdout or stderr that contains the token."""

    def config(base_url: str, name: str, **env: str) -> list[str]:
        text = _toml(base_url, token=source == "toml")
        path = _write(tmp_path / f"{name}.toml", text, mode=0o644 if name == "exposed" else 0o600)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        if source == "env":
            monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
        return ["--config", str(path)]

    outputs: list[tuple[list[str], int, str]] = []

    def run(argv: list[str]) -> None:
        code, text = _cli(argv, capsys)
        outputs.append((argv, code, text))

    good = config(server.base_url, "good")
    for argv in (["config", "check"], ["config", "show"], ["config", "show", "--json"]):
        run([*argv, *good])
        run([*argv, *config(server.base_url, "exposed")])
    run(["schema", "--check", "--dir", str(SCHEMAS)])
    run(["schema", "--check", "--dir", str(tmp_path / "no-schemas")])
    for role in ("executor", "planner"):
        run(["complete", "--role", role, *good, "hello"])
        run(["complete", "--role", role, "--json", *good, "hello"])
        server.plan(
            Reply(
                401, error_body(f"Invalid key {TOKEN_MARK}", type_=TOKEN_MARK), headers=ECHO_HEADERS
            )
        )
        run(["complete", "--role", role, *good, "hello"])
        server.plan(Reply(503, error_body(f"down {TOKEN_MARK}", code="503")))
        run(["complete", "--role", role, "--stream", *good, "hello"])
        server.plan(Reply(400, error_body(f"Budget has been exceeded! Key={TOKEN_MARK}")))
        run(["complete", "--role", role, *good, "hello"])
        body = json.loads(
            (
                RESPONSES / ("ant_text_plain.json" if role == "executor" else "oai_text_plain.json")
            ).read_text()
        )
        streaming.plan(Body(body))
        run(
            ["complete", "--role", role, "--stream", *config(streaming.base_url, "streaming"), "hi"]
        )
        run(["complete", "--role", role, *config(closed_port_url(), "refused"), "hello"])
    # Configuration failures that involve the token: a broken one, a bad neighbour, no file.
    monkeypatch.setenv("NISSE_MAX_OUTPUT_TOKENS", TOKEN)
    run(["config", "check", *good])
    monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN + " oops")
    run(["config", "show", "--json", *good])
    monkeypatch.delenv("NISSE_MAX_OUTPUT_TOKENS")
    run(["complete", "--role", "executor", *good, "hello"])
    run(["config", "check", "--config", str(tmp_path / "missing.toml")])

    codes = [code for _, code, _ in outputs]
    assert {0, 1, 2, 3, 4} <= set(codes), codes  # success and every failure kind was exercised
    for argv, code, text in outputs:
        assert TOKEN not in text, f"{argv} exited {code}: {text[:500]}"
    assert any("[redacted]" in text for _, _, text in outputs)


# --- the readable-file warning ------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_token_file_readable_by_others_warns(tmp_path: Path, mode: int) -> None:
    """Loading a TOML file that holds the token and is readable by group or others warns
    with InsecureConfigFileWarning, naming the mode and never the token."""
    path = _write(tmp_path / "c.toml", _toml("http://127.0.0.1:9"), mode=mode)
    with pytest.warns(InsecureConfigFileWarning) as caught:
        load_settings(path)
    (warning,) = [w for w in caught if w.category is InsecureConfigFileWarning]
    assert f"(mode {mode:04o})" in str(warning.message)
    assert TOKEN not in str(warning.message)


@pytest.mark.parametrize(("mode", "token"), [(0o600, True), (0o400, True), (0o644, False)])
def test_an_owner_only_file_or_one_without_the_token_does_not_warn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int, token: bool
) -> None:
    """A token file readable by its owner alone, or a readable file without the token, loads silently."""
    if not token:
        monkeypatch.setenv("NISSE_LLM_TOKEN", TOKEN)
    path = _write(tmp_path / "c.toml", _toml("http://127.0.0.1:9", token=token), mode=mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_settings(path)
    assert [w for w in caught if w.category is InsecureConfigFileWarning] == []


# --- hostile servers and files: where the token may go -------------------------------------


def _chain_texts(exc: BaseException) -> list[str]:
    """Text of ``exc`` and of every exception chained to it, as cause or context."""
    texts = _exception_texts(exc)
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        texts += [str(current), repr(current), repr(current.args)]
        todo += [current.__cause__, current.__context__]
    return texts


@pytest.mark.parametrize("kind", ["complete", "stream"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ECHO_PLACES)
async def test_a_token_echoed_into_a_malformed_response_reaches_no_cause_traceback_or_log(
    where: str, mode: Mode, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A server echoing the token where httpx, httpcore or h11 quote what they reject:
    UpstreamUnavailable, and neither the error, its chained causes and contexts, its
    traceback, nor any DEBUG record of httpx, httpcore or nisse_llm holds the token."""
    caplog.set_level(logging.DEBUG)
    with RawServer(_echo(where)) as raw:
        client = make_client("openai_chat", mode, raw.base_url, sleep=SleepLog())
        try:
            with pytest.raises(LLMError) as caught:
                await _call(client, kind)
        finally:
            await close(client)
        assert [Conn(None, r, raw.stop).token for r in raw.requests] == [TOKEN]  # type: ignore[arg-type]
    assert isinstance(caught.value, UpstreamUnavailable)
    _assert_clean(_chain_texts(caught.value), f"{where} exception")
    records = caplog.records
    assert any(r.name.startswith("httpcore") for r in records)  # the traces were captured
    for record in records:
        _assert_clean(_record_texts(record), f"{where} log record {record.name}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "base_url",
    [f"http://user:{TOKEN}@127.0.0.1:{{port}}", f"http://{TOKEN}@127.0.0.1:{{port}}"],
    ids=["user-password", "user-only"],
)
async def test_a_base_url_with_userinfo_is_refused_and_nothing_is_sent(
    base_url: str, mode: Mode
) -> None:
    """``user:password@`` in a base URL (httpx would send it as Basic auth in place of the
    token) is a ConfigError at construction that shows neither part; no connection is made."""
    with RawServer(whole(200, b"{}")) as raw:
        url = base_url.format(port=raw.base_url.rsplit(":", 1)[1])
        with pytest.raises(ConfigError) as caught:
            make_client("openai_chat", mode, url, sleep=SleepLog())
        assert raw.connections == 0
    _assert_clean(_chain_texts(caught.value), "userinfo client error")
    assert "user:password@" in str(caught.value)


def test_a_settings_base_url_with_userinfo_is_refused_without_echoing_it(tmp_path: Path) -> None:
    """The same URL from a TOML file is a ConfigError naming the key, never the password."""
    path = _write(tmp_path / "c.toml", _toml(f"http://user:{TOKEN}@127.0.0.1:9"))
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert "llm.base_url" in str(caught.value)
    _assert_clean(_chain_texts(caught.value), "userinfo settings error")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("token", [TOKEN + "\r\nX-Injected: 1", TOKEN + "é", " " + TOKEN])
def test_a_token_that_cannot_travel_in_a_header_is_refused_unquoted(token: str, mode: Mode) -> None:
    """A CR/LF, non-ASCII or space in a token passed to a constructor: ConfigError, not
    quoting it (nor any piece of it)."""
    cls = LiteLLMClient if mode == "sync" else AsyncLiteLLMClient
    with pytest.raises(ConfigError) as caught:
        cls("http://127.0.0.1:9", token)
    _assert_clean(_chain_texts(caught.value), "bad token error")


def _completion(conn: Conn) -> None:
    body = (RESPONSES / "oai_text_plain.json").read_bytes()
    conn.send(
        raw_head(
            200,
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            chunked=False,
        )
    )
    conn.send(body)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_loopback_base_url_never_goes_through_an_environment_proxy(
    host: str, variable: str, mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a proxy in the environment, a call to a loopback base URL goes straight to it:
    the proxy sees no connection and so never the token."""
    with RawServer(_completion) as proxy, RawServer(_completion) as direct:
        monkeypatch.setenv(variable, proxy.base_url)
        url = direct.base_url.replace("127.0.0.1", host)
        client = make_client("openai_chat", mode, url, sleep=SleepLog())
        try:
            await complete(client, EVENTS, None, MODEL["openai_chat"])
        finally:
            await close(client)
        assert proxy.connections == 0
        assert len(direct.requests) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_an_environment_proxy_carries_the_token_for_a_remote_base_url(
    mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY is honoured for a base URL that is not loopback (documented: the token
    travels through it), and NO_PROXY exempts a host."""
    with RawServer(_completion) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url)
        client = make_client("openai_chat", mode, "http://llm.example.test:4000", sleep=SleepLog())
        try:
            await complete(client, EVENTS, None, MODEL["openai_chat"])
        finally:
            await close(client)
        (request,) = proxy.requests
        assert request.startswith(b"POST http://llm.example.test:4000/chat/completions ")
        monkeypatch.setenv("NO_PROXY", "llm.example.test")
        client = make_client("openai_chat", mode, "http://llm.example.test:4000", sleep=SleepLog())
        try:
            with pytest.raises(UpstreamUnavailable):  # straight to a host that does not exist
                await complete(client, EVENTS, None, MODEL["openai_chat"])
        finally:
            await close(client)
        assert len(proxy.requests) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "proxy",
    ["socks5://127.0.0.1:1080", f"ftp://user:{TOKEN}@127.0.0.1:21", "http://127.0.0.1:port"],
)
def test_a_malformed_environment_proxy_is_a_config_error(
    proxy: str, mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy httpx cannot use (socks5 without its extra, ftp, a bad port) is a
    ConfigError at construction naming the variable, not an ImportError or ValueError,
    and shows no credentials it holds."""
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    cls = LiteLLMClient if mode == "sync" else AsyncLiteLLMClient
    with pytest.raises(ConfigError, match="HTTPS_PROXY") as caught:
        cls("https://llm.example.test", TOKEN)
    _assert_clean(_chain_texts(caught.value), "proxy error")


def test_a_rewritten_pin_record_never_sends_the_token_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone who can write the task file points the record's base_url at their server
    and recomputes the unkeyed fingerprint: resuming raises a ConfigError naming both
    URLs, whether the operator's URL is passed or comes from NISSE_LLM_BASE_URL, and the
    attacker's server sees no connection."""
    with RawServer(_completion) as operator, RawServer(_completion) as attacker:
        settings = load_settings(_write(tmp_path / "c.toml", _toml(operator.base_url)))
        record = settings.pin().record()
        body = {k: v for k, v in record.items() if k != "fingerprint"} | {
            "base_url": attacker.base_url
        }
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        forged = body | {"fingerprint": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()}
        with pytest.raises(ConfigError) as caught:
            Pin.from_record(forged, TOKEN, base_url=settings.llm.base_url)
        assert operator.base_url in str(caught.value)
        assert attacker.base_url in str(caught.value)
        monkeypatch.setenv("NISSE_LLM_BASE_URL", operator.base_url)
        with pytest.raises(ConfigError, match="is not the operator's"):
            Pin.from_record(forged, TOKEN)
        monkeypatch.delenv("NISSE_LLM_BASE_URL")
        with pytest.raises(ConfigError, match="needs the operator's base URL"):
            Pin.from_record(forged, TOKEN)
        # The genuine record resumes, and calls go to the operator's server.
        pin = Pin.from_record(record, TOKEN, base_url=operator.base_url)
        with RoleRouter.from_pin(pin) as router:
            router.complete("planner", EVENTS, None)
        assert attacker.connections == 0
        assert len(operator.requests) == 1
        _assert_clean(_chain_texts(caught.value), "forged record error")


# --- the same probes in their own processes: time and memory bounded --------------------


def _probe(case: str, mode: str, directory: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability._hostile_token", case, mode, str(directory)],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    figures.record(
        f"token probe {case} {mode}: {report['outcome']} in {report['seconds']} s, "
        f"peak +{report['growth_mb']} MB"
    )
    return report


TOKEN_PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    **{f"echo_{where}": ("UpstreamUnavailable", {"tokens_sent": [TOKEN]}) for where in ECHO_PLACES},
    "userinfo": ("ConfigError", {"connections": 0}),
    "proxy_loopback": ("ok", {"proxy_connections": 0, "connections": 1}),
    "forged_pin": ("ConfigError", {"connections": 0}),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(TOKEN_PROBES))
def test_token_probes_in_their_own_process_are_bounded_and_send_nothing_astray(
    case: str, mode: Mode, tmp_path: Path
) -> None:
    """Each probe, run alone in a child process: the class raised, under 2 s and 20 MB at
    peak, the token in no error text, chained exception, traceback or log record, and
    each server saw exactly what it should (no connection where the token must not go)."""
    outcome, seen = TOKEN_PROBES[case]
    report = _probe(case, mode, tmp_path)

    assert report["outcome"] == outcome, report["message"]
    assert report["seconds"] < 2.0
    assert report["growth_mb"] < 20
    assert not report["token_in_error"]
    assert not report["token_in_logs"]
    for key, value in seen.items():
        assert report[key] == value, key
