"""``nisse-llm complete`` against the loopback server, configured by a TOML file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nisse_llm.cli.main import main
from tests.config.helpers import write_config
from tests.transport.harness import TOKEN
from tests.transport.loopback import TOKEN_MARK, LoopbackServer, Reply, error_body, fixture_body
from tests.transport.overflow_bodies import OVERFLOWS

ROLES = {
    "executor": "gpt-scripted",  # no rule row: budgets map to levels, sampling allowed
    "planner": "claude-sonnet-4-5",
    "delegate": "claude-opus-4-1",
    "consultant": "openai/gpt-5",
}


@pytest.fixture
def config(tmp_path: Path, server: LoopbackServer) -> str:
    """A complete TOML config pointing at the loopback server, without retry waits."""
    path = write_config(
        tmp_path / "nisse.toml",
        {
            "llm": {"base_url": server.base_url, "token": TOKEN, "rate_limit_retries": 0},
            "roles": ROLES,
        },
    )
    return str(path)


def test_prints_reply_and_usage(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reply text goes to stdout and the usage to stderr; the system prompt is sent, marked for caching."""
    code = main(
        ["complete", "--role", "planner", "--config", config, "--system", "Be brief.", "hi"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out == "echo: hi\n"
    assert err == ("usage: model=claude-sonnet-4-5 input=11 output=2 cache_read=0 cache_write=0\n")
    (seen,) = server.requests
    assert seen.path == "/v1/messages"
    assert seen.json()["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]


def test_prints_tool_calls(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool call in the reply is printed as its name and JSON arguments."""
    server.plan(Reply(200, fixture_body("oai_tool_call_single.json")))
    code = main(["complete", "--role", "executor", "--config", config, "weather?"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert out == 'tool call GetWeatherArgs {"city": "Edinburgh", "country": "UK", "units": "c"}\n'


def test_json_prints_canonical_events(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --json each reply event is one JSON line in the canonical form."""
    code = main(["complete", "--role", "consultant", "--config", config, "--json", "hi"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"kind": "assistant_text", "text": "echo: hi", "model": "openai/gpt-5"}
    ]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply(503, error_body(f"down {TOKEN_MARK}", code="503")), 3),
        (Reply(429, error_body(f"slow down {TOKEN_MARK}", code="429")), 3),
        (Reply(429, error_body(f"Budget has been exceeded! Key={TOKEN_MARK}", code="429")), 4),
        (Reply(400, error_body(f"bad request {TOKEN_MARK}", code="400")), 1),
        (Reply(401, error_body(f"Invalid key {TOKEN_MARK}", type_="auth_error", code="401")), 2),
        (Reply(200, b"<html>oops</html>", content_type="text/html"), 1),
        (Reply(400, OVERFLOWS["openai-messages-resulted-in"].body), 5),
        (Reply(400, OVERFLOWS["proxy-chat-shape-openai-entry"].body), 5),
    ],
    ids=["503", "429", "budget", "400", "401", "200-html", "overflow", "overflow-via-proxy"],
)
def test_exit_codes_by_failure(
    reply: Reply, code: int, config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failures exit 3 (upstream), 4 (budget), 5 (context window), 2 (a refused token) or 1
    (other), saying why on stderr without the token."""
    server.plan(reply)
    assert main(["complete", "--role", "executor", "--config", config, "hi"]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: POST {server.base_url}/chat/completions: ")
    assert TOKEN not in err


def test_connection_refused_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A proxy that cannot be reached exits 3: keep the work, resume later."""
    path = write_config(
        tmp_path / "nisse.toml",
        {"llm": {"base_url": "http://127.0.0.1:9", "token": TOKEN}, "roles": ROLES},
    )
    assert main(["complete", "--role", "executor", "--config", str(path), "hi"]) == 3
    assert "ConnectError" in capsys.readouterr().err


def test_configuration_and_usage_errors_exit_2(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config missing the asked role, or a role it does not define, exits 2, names the
    role's key and sends nothing."""
    incomplete = write_config(
        tmp_path / "bad.toml", {"llm": {"base_url": "http://127.0.0.1:9", "token": TOKEN}}
    )
    assert main(["complete", "--role", "executor", "--config", str(incomplete), "hi"]) == 2
    assert "roles.executor" in capsys.readouterr().err
    assert main(["complete", "--role", "reviewer", "--config", config, "hi"]) == 2
    err = capsys.readouterr().err
    assert f"roles.reviewer (env NISSE_ROLE_REVIEWER): missing; set it in {config}" in err


def test_console_script_runs(config: str, server: LoopbackServer) -> None:
    """The installed ``nisse-llm`` entry point runs ``complete`` end to end, and a failure
    prints one error line (the library's log records stay silent without logging setup)."""
    script = Path(sys.executable).with_name("nisse-llm")
    server.plan(Reply(), Reply(503, error_body("down", code="503")))
    runs = [
        subprocess.run(
            [str(script), "complete", "--role", "delegate", "--config", config, "hello"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        for _ in range(2)
    ]
    assert (runs[0].returncode, runs[0].stdout) == (0, "echo: hello\n")
    assert "model=claude-opus-4-1" in runs[0].stderr
    assert (runs[1].returncode, runs[1].stdout) == (3, "")
    assert runs[1].stderr.splitlines() == [
        f"error: POST {server.base_url}/v1/messages: upstream unavailable (503): "
        '{"error": {"message": "down", '
        '"type": "None", "param": "None", "code": "503"}}'
    ]


def test_request_option_flags_reach_the_body(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--reasoning, --max-output-tokens, --tool-choice, --temperature map as RequestOptions do."""
    argv = ["complete", "--config", config, "--max-output-tokens", "6000", "--reasoning"]
    assert main([*argv, "high", "--role", "planner", "--tool-choice", "none", "hi"]) == 0
    assert main([*argv, "2000", "--role", "executor", "--temperature", "0.25", "hi"]) == 0
    assert main([*argv, "off", "--role", "planner", "--stream", "hi"]) == 0
    capsys.readouterr()
    planner, executor, streamed = (seen.json() for seen in server.requests)
    assert planner["max_tokens"] == 6000
    assert planner["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert "tool_choice" not in planner  # no tools: "none" sends nothing
    assert executor["max_tokens"] == 6000
    assert executor["reasoning_effort"] == "low"
    assert executor["temperature"] == 0.25
    assert streamed["thinking"] == {"type": "disabled"}
    assert streamed["stream"] is True


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--reasoning", "extreme"], "argument --reasoning: invalid value 'extreme'"),
        (["--max-output-tokens", "0"], "argument --max-output-tokens: invalid value '0'"),
        (["--temperature", "2.5"], "less than or equal to 2"),
        (["--temperature", "warm"], "argument --temperature: invalid value 'warm'"),
        (["--tool-choice", "two words"], "argument --tool-choice: invalid value"),
    ],
)
def test_invalid_option_flags_exit_2_and_send_nothing(
    flags: list[str],
    words: str,
    config: str,
    server: LoopbackServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["complete", "--role", "executor", "--config", config, *flags, "hi"]) == 2
    assert words in capsys.readouterr().err
    assert server.requests == []


def test_a_flag_combination_the_model_refuses_exits_1_and_sends_nothing(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Temperature for the Anthropic planner is refused before sending, saying why."""
    assert (
        main(["complete", "--role", "planner", "--config", config, "--temperature", "0", "x"]) == 1
    )
    err = capsys.readouterr().err
    assert "temperature cannot be sent to an Anthropic model" in err
    assert server.requests == []


def test_the_usage_line_names_the_cost_and_the_proxys_call_id(
    config: str, server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Behind a LiteLLM proxy the usage line also gives the call's cost and the proxy's call id."""
    headers = (("x-litellm-call-id", "5b1f0c9e-call"), ("x-litellm-response-cost", "0.0012"))
    server.plan(Reply(headers=headers))
    assert main(["complete", "--role", "executor", "--config", config, "hi"]) == 0
    err = capsys.readouterr().err
    assert err.rstrip().endswith("cost_usd=0.0012 call_id=5b1f0c9e-call")
