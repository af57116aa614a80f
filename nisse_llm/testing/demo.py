"""The main job (`make demo`): a short agent session through a real local LiteLLM proxy.

Run ``python -m nisse_llm.testing.demo`` (``make demo`` installs what it needs); with
``--spans`` (or ``NISSE_DEMO_SPANS=1``) it also prints each call's OpenTelemetry span,
given ``opentelemetry-sdk`` (``pip install 'nisse-llm[otel]' opentelemetry-sdk``). The
model provider is scripted (`ScriptedServer`); the config, pin, renderers, clients and
the LiteLLM proxy process are real. Every process it starts is stopped on the way out,
also on Ctrl-C, SIGTERM or an error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
import types
from collections.abc import Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from nisse_llm.errors import BudgetExhausted, LLMError, UpstreamUnavailable
from nisse_llm.events.canonical import (
    AssistantText,
    CallInfo,
    CanonicalEvent,
    Reasoning,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserText,
)
from nisse_llm.routes import ROUTE_TABLE
from nisse_llm.testing.bodies import Tokens, ToolUse
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyError, ProxyModel
from nisse_llm.testing.script import Script
from nisse_llm.testing.server import ScriptedServer
from nisse_llm.testing.turns import reply

__all__ = ["DEMO_MODELS", "main"]

PLANNER = "claude-sonnet-5-5"
EXECUTOR = "gpt-5.6-sol"
CONSULTANT = "claude-opus-5-5"

#: The proxy's model entries: the same names as config/litellm.dev.yaml, whose real
#: deployments the same TOML reaches. The consultant's deployment has a budget its
#: first call crosses, so the demo can show a real refusal.
DEMO_MODELS: tuple[ProxyModel, ...] = (
    ProxyModel(PLANNER, "anthropic"),
    ProxyModel(EXECUTOR, "openai"),
    ProxyModel(
        CONSULTANT,
        "anthropic",
        max_budget=1e-6,
        input_cost_per_token=15e-6,
        output_cost_per_token=75e-6,
    ),
)

RUN_TESTS = ToolSpec(
    name="run_tests",
    description="Run the test suite, or the tests a selector names.",
    parameters={"type": "object", "properties": {"selector": {"type": "string"}}},
)
EDIT_FILE = ToolSpec(
    name="edit_file",
    description="Replace one exact string in a file.",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
        },
        "required": ["path", "old", "new"],
    },
)
TOOLS = [RUN_TESTS, EDIT_FILE]
TASK = "tests/test_calc.py::test_add fails. Find out why and fix it."


def _script(script: Script) -> None:
    script.messages(
        reply(
            "Plan: 1) run the failing test to see the assertion; 2) fix add() in calc.py; "
            "3) run the test again.",
            usage=Tokens(input=412, output=38),
        ),
        reply("Reviewed: the fix is minimal and correct.", usage=Tokens(input=655, output=11)),
    )
    # The executor, a current OpenAI reasoning model, takes the Responses route.
    script.responses(
        reply(
            ToolUse("run_tests", {"selector": "tests/test_calc.py"}),
            usage=Tokens(input=530, output=17),
        ),
        reply(
            "add() subtracts. Fixing it.",
            ToolUse("edit_file", {"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
            usage=Tokens(input=604, output=41),
        ),
        reply(
            ToolUse("run_tests", {"selector": "tests/test_calc.py"}),
            usage=Tokens(input=671, output=17),
        ),
        reply(
            "Done: add() returned a - b; it now returns a + b and test_add passes.",
            usage=Tokens(input=720, output=24),
        ),
    )


# The agent's tools, faked: the demo is about the LLM traffic, not about editing files.
_TEST_RUNS = (
    ("FAILED tests/test_calc.py::test_add - assert -1 == 3", True),
    ("1 passed in 0.01s", False),
)


def _run_tool(call: ToolCall, runs: Iterator[tuple[str, bool]]) -> ToolResult:
    if call.tool == "run_tests":
        output, failed = next(runs)
        return ToolResult(call_id=call.call_id, output=output, is_error=failed)
    return ToolResult(call_id=call.call_id, output=f"edited {call.arguments['path']}")


class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, text: str = "", indent: int = 0) -> None:
        pad = " " * indent
        for line in text.splitlines() or [""]:
            self.out.write(f"{pad}{line}\n")
        self.out.flush()

    def step(self, number: int, title: str) -> None:
        self(f"\n[{number}/5] {title}")


def _describe(event: CanonicalEvent) -> str:
    if isinstance(event, AssistantText):
        return f"says: {event.text}"
    if isinstance(event, ToolCall):
        return f"calls {event.tool}({json.dumps(event.arguments)})  [call id {event.call_id}]"
    if isinstance(event, ToolResult):
        return f"tool result{' (error)' if event.is_error else ''}: {event.output}"
    if isinstance(event, Reasoning):
        return f"reasoning block ({event.block.get('type')})"
    if isinstance(event, UserText):
        return f"user: {event.text}"
    raise AssertionError(f"unexpected event {event!r}")


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            del os.environ[name]
        else:
            os.environ[name] = previous


@contextlib.contextmanager
def _sdk_log_shown(out: TextIO) -> Iterator[None]:
    # nisse_llm logs each failed call once; show those lines in place, not on stderr.
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("    log: %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("nisse_llm")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    # SIGTERM would skip every `finally`; as SystemExit it unwinds and stops the proxy.
    def _exit(signum: int, frame: types.FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _write_config(directory: Path, base_url: str) -> Path:
    path = directory / "nisse.toml"
    path.write_text(
        "# nisse_llm configuration for the demo. For a real proxy change base_url and\n"
        "# export NISSE_LLM_TOKEN; nothing else.\n"
        "[llm]\n"
        f'base_url = "{base_url}"\n'
        "max_output_tokens = 4096\n"
        "\n"
        "[roles]\n"
        f'planner = "{PLANNER}"\n'
        f'executor = "{EXECUTOR}"\n'
        f'delegate = "{PLANNER}"\n'
        f'consultant = "{CONSULTANT}"\n'
    )
    path.chmod(0o600)  # a file others could write would warn: it could redirect base_url
    return path


def _session(proxy: LiteLLMProxy, script: Script, config: Path, say: _Printer) -> None:
    from nisse_llm.config.settings import load_settings
    from nisse_llm.transport.routers import RoleRouter

    with _env("NISSE_LLM_TOKEN", proxy.token):
        pin = load_settings(config).pin()
    say.step(3, f"config loaded from {config} and pinned for this task")
    say(config.read_text().rstrip(), indent=6)
    say("token: from NISSE_LLM_TOKEN (never in the file, the pin record or this output)", indent=4)
    say("pin record (what the task log keeps; a resumed task restores from it):", indent=4)
    say(json.dumps(pin.record(), indent=2), indent=6)

    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    usage_rows: list[tuple[str, str, str, Usage, CallInfo]] = []
    say.step(4, "agent session: planner on /v1/messages, executor on /v1/responses")
    say(f"user: {TASK}", indent=4)
    with RoleRouter.from_pin(pin, sleep=sleep) as router:

        def ask(role: str, log: Sequence[CanonicalEvent]) -> list[CanonicalEvent]:
            completion = router.completion(role, log, TOOLS)
            events, usage = completion.events, completion.usage
            info = completion.call or CallInfo()
            model = pin.model_for(role)
            path = ROUTE_TABLE[pin.route(role)].path
            usage_rows.append((role, model, path, usage, info))
            say(
                f"{role} ({model} via {path}; usage: in {usage.input}, out {usage.output}):",
                indent=4,
            )
            for event in events:
                say(_describe(event), indent=8)
            return events

        runs = iter(_TEST_RUNS)
        log: list[CanonicalEvent] = [UserText(text=TASK)]
        log += ask("planner", log)
        while True:
            events = ask("executor", log)
            log += events
            calls = [e for e in events if isinstance(e, ToolCall)]
            if not calls:
                break
            for call in calls:
                result = _run_tool(call, runs)
                say(_describe(result), indent=8)
                log.append(result)

        log.append(UserText(text="Consultant: review the fix."))
        log += ask("consultant", log)
        say("usage per call (cost and call id as the proxy priced and named it):", indent=4)
        for role, model, path, usage, info in usage_rows:
            cost = "-" if info.cost_usd is None else f"${info.cost_usd:.6f}"
            say(
                f"{role:<11}{model:<19}{path:<19}in {usage.input:>5}  out {usage.output:>4}"
                f"  {cost:>10}  {(info.call_id or '-')[:8]}",
                indent=6,
            )
        total = sum((row[3] for row in usage_rows), Usage())
        spent = sum((row[4].cost_usd or Decimal(0) for row in usage_rows), Decimal(0))
        say(
            f"{'total':<49}in {total.input:>5}  out {total.output:>4}  ${spent:.6f}",
            indent=6,
        )

        say.step(5, "one failure, classified: the consultant's deployment is over its budget")
        say(
            f"(the proxy's {CONSULTANT} entry has max_budget $0.000001 per budget_duration "
            f"{_CONSULTANT_BUDGET.budget_duration}; the call above spent it)",
            indent=4,
        )
        seen = len(script.requests)
        started = time.monotonic()
        try:
            router.complete("consultant", [*log, UserText(text="One more look?")], TOOLS)
        except BudgetExhausted as exc:
            elapsed = time.monotonic() - started
            say(
                f"raised {type(exc).__name__} (an {UpstreamUnavailable.__name__}), HTTP {exc.status}",
                indent=4,
            )
            say(_budget_words(exc.server_message or str(exc)), indent=4)
            say(
                f"not retried: {len(slept)} waits, {len(script.requests) - seen} requests reached "
                f"the upstream, returned in {elapsed:.2f} s",
                indent=4,
            )
            say(
                "what the agent does: keep the work, stop this branch, tell the operator;", indent=4
            )
            say(
                "`nisse-llm complete` exits 4 for this (3 for other UpstreamUnavailable).", indent=4
            )
        else:
            raise LLMError("the budget refusal did not happen: the demo's proxy config is wrong")


_CONSULTANT_BUDGET = next(m for m in DEMO_MODELS if m.name == CONSULTANT)
# LiteLLM 1.108's deployment budget refusal ends "...: <spend> >= <budget_duration>": the
# period stands where the limit belongs.
_SPEND_VS_PERIOD = re.compile(r"(?P<spend>\d[\d.e-]*) >= (?P<period>\w+)\s*$")


def _budget_words(said: str) -> str:
    """What the proxy's budget refusal says (its text is in the log line just above)."""
    found = _SPEND_VS_PERIOD.search(said)
    if found is None:
        return f"proxy said: {said}"
    return (
        'the proxy\'s message (the log line above) ends "<spend> >= <budget period>": '
        f"${found['spend']} spent in this {found['period']} period"
    )


#: Set to 1 to print the demo's spans, as ``--spans`` does.
SPANS_ENV = "NISSE_DEMO_SPANS"


@contextlib.contextmanager
def _spans_printed(say: _Printer) -> Iterator[None]:
    """nisse_llm instrumented for the ``with``, inside an agent span; each span printed on
    one line as it ends."""
    from nisse_llm.telemetry import instrument, uninstrument

    try:
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
    except ImportError:
        raise ProxyError(
            "--spans needs the OpenTelemetry SDK: pip install 'nisse-llm[otel]' opentelemetry-sdk"
        ) from None

    class _Lines(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            for span in spans:
                say(_span_line(span), indent=8)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Lines()))
    instrument(tracer_provider=provider)
    try:
        # The session as one trace: every call span is the agent span's child.
        with provider.get_tracer("nisse_llm.demo").start_as_current_span("invoke_agent demo"):
            yield
    finally:
        uninstrument()
        provider.shutdown()


#: The attributes a span's line shows, and their short names.
_SHOWN = {
    "gen_ai.provider.name": "provider",
    "nisse_llm.role": "role",
    "gen_ai.usage.input_tokens": "in",
    "gen_ai.usage.output_tokens": "out",
    "gen_ai.response.finish_reasons": "finish",
    "nisse_llm.cost_usd": "usd",
    "error.type": "error",
}


def _span_line(span: object) -> str:
    from opentelemetry.sdk.trace import ReadableSpan

    assert isinstance(span, ReadableSpan)
    context = span.get_span_context()
    trace_id = "-" if context is None else f"{context.trace_id:032x}"[:12]
    took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    attributes = span.attributes or {}
    shown = " ".join(
        f"{short}={_shown(attributes[key])}" for key, short in _SHOWN.items() if key in attributes
    )
    return f"span {span.name!r} {span.kind.name} trace {trace_id}.. {took:.1f} ms {shown}"


def _shown(value: object) -> str:
    if isinstance(value, tuple | list):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the demo; 0 on success, 1 if a step failed, 2 if the proxy is not installed.

    ``--spans`` (or ``NISSE_DEMO_SPANS=1``) prints each call's span as it ends.
    """
    say = _Printer(out or sys.stdout)
    spans = "--spans" in (argv or ()) or os.environ.get(SPANS_ENV, "") == "1"
    say("nisse_llm demo: a short agent session through a real local LiteLLM proxy")
    say("=" * 74)
    say("The model provider here is SCRIPTED: a local server (nisse_llm.testing.ScriptedServer)")
    say("answers with canned turns, so no API key or network is needed. Everything between")
    say("the agent and that server is real: nisse_llm's config, pin, renderers and clients,")
    say("and a LiteLLM proxy process on loopback. To use a real proxy instead, start one")
    say("(`litellm --config config/litellm.dev.yaml` serves these model names from real")
    say("providers), then set base_url in the TOML below and NISSE_LLM_TOKEN; nothing else.")
    try:
        with _sigterm_as_exit(), _sdk_log_shown(say.out), contextlib.ExitStack() as stack:
            script = Script()
            _script(script)
            upstream = stack.enter_context(ScriptedServer(script))
            say.step(1, f"scripted upstream listening on {upstream.base_url}")
            proxy = LiteLLMProxy(upstream.base_url, models=DEMO_MODELS)
            say.step(2, f"starting the LiteLLM proxy: {proxy.executable}")
            stack.enter_context(proxy)
            say(
                f"healthy at {proxy.base_url} after {proxy.startup_s:.1f} s (pid {proxy.pid})",
                indent=4,
            )
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nisse-demo-")))
            if spans:
                stack.enter_context(_spans_printed(say))
            _session(proxy, script, _write_config(directory, proxy.base_url), say)
            say("\nstopping the proxy and the scripted upstream")
    except ProxyError as exc:
        say(f"\ndemo stopped: {exc}")
        return 2
    except LLMError as exc:
        say(f"\ndemo failed: {type(exc).__name__}: {exc}")
        return 1
    except KeyboardInterrupt:
        say("\ninterrupted; every process the demo started has been stopped")
        return 130
    except SystemExit:
        say("\nterminated; every process the demo started has been stopped")
        raise
    say("done: every process the demo started has been stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
