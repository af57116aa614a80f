"""`nisse-llm config check --online` and `check_online` through the real LiteLLM proxy:
every role good, a model the proxy does not serve, a ceiling above the model's limit,
reasoning asked of a model that cannot, limits unknown, a wrong token, the proxy down."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from nisse_llm.cli.main import EXIT_OK, EXIT_UPSTREAM, EXIT_USAGE, main
from nisse_llm.config.settings import load_settings
from nisse_llm.testing import Script
from nisse_llm.testing.proxy import LiteLLMProxy
from nisse_llm.transport.online import acheck_online, check_online
from tests.config.helpers import write_config

pytestmark = pytest.mark.proxy

GOOD = {
    # The entries are aliases of gpt-5.4-mini and claude-sonnet-4-6: ``like`` says so.
    "executor": {"model": "gpt-priced", "like": "gpt-5.4-mini"},
    "planner": {
        "model": "claude-priced",
        "like": "claude-sonnet-4-6",
        "reasoning": "high",
        "max_output_tokens": 32000,
    },
    "delegate": {"model": "claude-priced", "like": "claude-sonnet-4-6"},
    "consultant": {"model": "gpt-priced", "like": "gpt-5.4-mini"},
}


def _config(tmp_path: Path, base_url: str, token: str, roles: dict[str, Any]) -> str:
    document = {"llm": {"base_url": base_url, "token": token}, "roles": roles}
    return str(write_config(tmp_path / "nisse.toml", document))


def _online(config: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["config", "check", "--online", "--config", config])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    start = out.index("online: asking")
    return code, [" ".join(line.split()) for line in out[start:].splitlines()]


def _row(lines: list[str], role: str) -> str:
    return next(line for line in lines if line.startswith(role + " "))


def test_every_role_good_exits_0(
    tmp_path: Path, proxy: LiteLLMProxy, script: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    """Served models, ceilings within their limits, reasoning where supported: exit 0, and
    no completion reached the upstream."""
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, GOOD), capsys)
    assert code == EXIT_OK
    assert "proxy: answered; token: accepted" in lines
    assert _row(lines, "planner") == "planner claude-priced anthropic_messages 32000 yes ok"
    assert _row(lines, "executor") == "executor gpt-priced openai_responses 16384 yes ok"
    assert script.requests == []


def test_a_model_the_proxy_does_not_serve_fails_its_role(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    roles = {**GOOD, "delegate": "claude-nowhere-9"}
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, roles), capsys)
    assert code == EXIT_USAGE
    row = _row(lines, "delegate")
    assert "claude-nowhere-9" in row
    assert " no fail; the proxy does not serve claude-nowhere-9 (GET /v1/models)" in row
    assert _row(lines, "executor").endswith(" yes ok")


def test_a_ceiling_above_the_models_limit_fails_its_role(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    roles = {**GOOD, "consultant": "gpt-tiny"}  # the entry's max_output_tokens is 100
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, roles), capsys)
    assert code == EXIT_USAGE
    assert (
        "fail; output ceiling 16384 exceeds gpt-tiny's max_output_tokens 100; lower "
        "roles.consultant.max_output_tokens or llm.max_output_tokens"
    ) in _row(lines, "consultant")


def test_reasoning_asked_of_a_model_that_cannot_fails_its_role(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    roles = {**GOOD, "executor": {"model": "gpt-noreason", "reasoning": "low"}}
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, roles), capsys)
    assert code == EXIT_USAGE
    assert "whose info says it does not support reasoning" in _row(lines, "executor")


def test_unknown_limits_are_reported_as_unknown_not_as_passing(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    """A served model the price map does not know: "unknown", with why; not a failure."""
    roles = {**GOOD, "executor": "gpt-scripted"}
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, roles), capsys)
    assert code == EXIT_OK
    assert _row(lines, "executor").endswith(
        "yes unknown; the proxy knows no output limit for gpt-scripted; the model rules cannot "
        "place gpt-scripted: the role follows the openai defaults; if it is an alias, set "
        "roles.executor.like to the model it stands for"
    )


def test_a_wrong_token_is_a_configuration_error(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = "sk-wrong-" + "5e1d" * 6
    code, lines = _online(_config(tmp_path, proxy.base_url, wrong, GOOD), capsys)
    assert code == EXIT_USAGE
    assert lines[1].startswith("token: refused by the proxy: GET ")
    assert "check NISSE_LLM_TOKEN or llm.token" in lines[1]
    assert wrong not in "\n".join(lines)


def test_the_proxy_down_is_the_upstream_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = _config(tmp_path, f"http://127.0.0.1:{port}", "sk-anything-123", GOOD)
    code, lines = _online(config, capsys)
    assert code == EXIT_UPSTREAM
    assert lines[1].startswith(f"proxy: unreachable: GET http://127.0.0.1:{port}/v1/models: ")


async def test_the_library_check_is_the_same_sync_and_async(proxy: LiteLLMProxy) -> None:
    """What an agent runs at task start: the same report from both twins."""
    roles = {**GOOD, "delegate": "claude-nowhere-9"}
    pin = load_settings(llm={"base_url": proxy.base_url, "token": proxy.token}, roles=roles).pin()
    sync_report = check_online(pin)
    async_report = await acheck_online(pin)
    assert sync_report == async_report
    assert not sync_report.ok
    assert [check.verdict for check in sync_report.roles] == ["ok", "ok", "fail", "ok"]


def test_an_alias_whose_like_the_rules_cannot_place_is_reported(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``like`` naming no model of the rule table is reported on its role, as unknown."""
    roles = {**GOOD, "executor": {"model": "gpt-priced", "like": "gpt-nowhere-1"}}
    code, lines = _online(_config(tmp_path, proxy.base_url, proxy.token, roles), capsys)
    assert code == 0
    assert _row(lines, "executor").endswith(
        "yes unknown; roles.executor.like = 'gpt-nowhere-1' is a model the model rules cannot "
        "place: the role follows the openai defaults; name a model the rules list"
    )


def test_a_two_role_file_naming_its_roles_passes_with_no_flag(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with ``require_roles = ["executor", "planner"]`` and only those two roles
    passes `config check --online` without --require: exit 0, one row per role."""
    roles = {role: GOOD[role] for role in ("executor", "planner")}
    document = {
        "require_roles": list(roles),
        "llm": {"base_url": proxy.base_url, "token": proxy.token},
        "roles": roles,
    }
    config = str(write_config(tmp_path / "nisse.toml", document))
    code, lines = _online(config, capsys)
    assert code == EXIT_OK
    assert [line.split()[0] for line in lines[3:]] == ["executor", "planner"]
    assert _row(lines, "planner") == "planner claude-priced anthropic_messages 32000 yes ok"


def test_a_misspelt_model_is_warned_before_the_proxy_refuses_it(
    tmp_path: Path, proxy: LiteLLMProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    """`config check --online` on gpt-6-astro: the load warns with the model meant and its
    route, and the proxy, which serves no such model, fails the role."""
    roles = {**GOOD, "consultant": "gpt-6-astro"}
    config = _config(tmp_path, proxy.base_url, proxy.token, roles)
    code = main(["config", "check", "--online", "--config", config])
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE
    assert err == (
        "warning: roles.consultant (env NISSE_ROLE_CONSULTANT): model 'gpt-6-astro' matches "
        "no model-rules row: did you mean gpt-6-astra? it would route to openai_responses "
        f"(as written: openai_chat); from file {config}\n"
    )
    online = [" ".join(line.split()) for line in out[out.index("online: asking") :].splitlines()]
    assert _row(online, "consultant").startswith(
        "consultant gpt-6-astro openai_chat 16384 no fail; the proxy does not serve gpt-6-astro"
    )
