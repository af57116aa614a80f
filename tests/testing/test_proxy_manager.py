"""`LiteLLMProxy` without launching it: finding the executable and the config it writes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from nisse_llm.testing.proxy import (
    LITELLM_BIN_ENV,
    LiteLLMProxy,
    ProxyModel,
    ProxyNotInstalled,
    ProxyStartError,
    litellm_executable,
    scripted_models,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_litellm(tmp_path: Path) -> Path:
    """An executable file standing in for litellm (never run by these tests)."""
    exe = tmp_path / "litellm"
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_missing_executable_says_to_run_make_proxy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no NISSE_LITELLM_BIN and no .venv-proxy here or above, the error names `make
    proxy` and the pin, and ends with the exact export line for this folder."""
    monkeypatch.delenv(LITELLM_BIN_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProxyNotInstalled) as caught:
        litellm_executable()
    message = str(caught.value)
    assert "make proxy" in message
    assert "litellm[proxy]==1.108.7" in message
    assert message.splitlines()[-1] == (
        f"    export NISSE_LITELLM_BIN={tmp_path}/.venv-proxy/bin/litellm"
    )


def _venv_proxy(folder: Path, *, executable: bool = True) -> Path:
    """A ``.venv-proxy/bin/litellm`` file in ``folder`` (never run by these tests)."""
    exe = folder / ".venv-proxy" / "bin" / "litellm"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\nexit 1\n")
    if executable:
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_the_checkouts_venv_proxy_is_found_from_a_folder_below(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Unset NISSE_LITELLM_BIN: the .venv-proxy of the current folder or the nearest above it."""
    monkeypatch.delenv(LITELLM_BIN_ENV, raising=False)
    checkout = tmp_path / "checkout"
    exe = _venv_proxy(checkout)
    deep = checkout / "tests" / "deep"
    deep.mkdir(parents=True)
    monkeypatch.chdir(checkout)
    assert litellm_executable() == checkout / ".venv-proxy" / "bin" / "litellm"
    monkeypatch.chdir(deep)
    assert litellm_executable() == exe


def test_the_nearest_executable_venv_proxy_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A nearer .venv-proxy shadows a farther one; one whose litellm is not executable is passed over."""
    monkeypatch.delenv(LITELLM_BIN_ENV, raising=False)
    outer = _venv_proxy(tmp_path)
    inner = _venv_proxy(tmp_path / "a")
    _venv_proxy(tmp_path / "a" / "b", executable=False)
    (tmp_path / "a" / "b" / "c").mkdir()
    monkeypatch.chdir(tmp_path / "a" / "b" / "c")
    assert litellm_executable() == inner
    monkeypatch.chdir(tmp_path)
    assert litellm_executable() == outer


def test_the_environment_variable_wins_over_a_venv_proxy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_litellm: Path
) -> None:
    """NISSE_LITELLM_BIN, when set, is used (and checked) even beside a .venv-proxy."""
    checkout = tmp_path / "checkout"
    _venv_proxy(checkout)
    monkeypatch.chdir(checkout)
    monkeypatch.setenv(LITELLM_BIN_ENV, str(fake_litellm))
    assert litellm_executable() == fake_litellm
    monkeypatch.setenv(LITELLM_BIN_ENV, str(tmp_path / "gone"))
    with pytest.raises(ProxyNotInstalled, match="is not an executable file"):
        litellm_executable()


def test_this_checkouts_proxy_is_found_without_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From this repository's folder, with NISSE_LITELLM_BIN unset, the kit finds the
    .venv-proxy that `make proxy` installed (as `make test` has)."""
    monkeypatch.delenv(LITELLM_BIN_ENV, raising=False)
    monkeypatch.chdir(REPO / "tests")
    found = litellm_executable()
    assert found == REPO / ".venv-proxy" / "bin" / "litellm"
    assert found.resolve().parent.joinpath("python").exists()


def test_a_path_that_is_not_executable_is_refused(tmp_path: Path) -> None:
    """A wrong NISSE_LITELLM_BIN fails at once, naming the path."""
    missing = tmp_path / "nope" / "litellm"
    with pytest.raises(ProxyNotInstalled, match="is not an executable file"):
        litellm_executable(missing)


def test_environment_variable_names_the_executable(
    monkeypatch: pytest.MonkeyPatch, fake_litellm: Path
) -> None:
    """NISSE_LITELLM_BIN is read when no path is passed."""
    monkeypatch.setenv(LITELLM_BIN_ENV, str(fake_litellm))
    assert litellm_executable() == fake_litellm


def test_config_has_the_settings_the_suite_relies_on(fake_litellm: Path) -> None:
    """No retries, the timeout, chat-completions for /v1/messages, rate limits enforced, custom auth."""
    proxy = LiteLLMProxy(
        "http://127.0.0.1:9/", executable=fake_litellm, request_timeout_s=2.5, token="sk-test"
    )
    config = proxy.config()
    assert config["litellm_settings"] == {
        "num_retries": 0,
        "request_timeout": 2.5,
        "use_chat_completions_url_for_anthropic_messages": True,
    }
    assert config["router_settings"]["optional_pre_call_checks"] == ["enforce_model_rate_limits"]
    assert config["general_settings"] == {
        "master_key": "os.environ/NISSE_PROXY_TOKEN",
        "custom_auth": "nisse_proxy_auth.user_api_key_auth",
    }
    assert "sk-test" not in repr(config)


def test_scripted_models_cover_both_providers_and_every_fault() -> None:
    """Plain, rpm-1, budget and dead-upstream entries exist for an openai/ and an anthropic/ model."""
    entries = {m.name: m.entry("http://up:1") for m in scripted_models("http://127.0.0.1:2")}
    assert entries["gpt-scripted"] == {
        "model_name": "gpt-scripted",
        "litellm_params": {
            "model": "openai/gpt-scripted",
            "api_base": "http://up:1",
            "api_key": "scripted-upstream-key",
        },
    }
    assert entries["claude-scripted"]["litellm_params"]["model"] == "anthropic/claude-scripted"
    assert entries["claude-rpm1"]["litellm_params"]["rpm"] == 1
    budget = entries["gpt-budget"]["litellm_params"]
    assert (budget["max_budget"], budget["budget_duration"]) == (1e-6, "1d")
    assert budget["input_cost_per_token"] > 0
    assert budget["output_cost_per_token"] > 0
    assert entries["claude-down"]["litellm_params"]["api_base"] == "http://127.0.0.1:2"
    assert entries["gpt-priced"]["litellm_params"]["model"] == "openai/gpt-5.4-mini"
    assert entries["claude-tiny"]["model_info"] == {
        "max_input_tokens": 300,
        "max_output_tokens": 100,
    }
    assert "model_info" not in entries["gpt-scripted"]


def test_a_model_entry_can_name_a_different_upstream_model() -> None:
    """``upstream_model`` and ``extra_params`` shape the litellm_params."""
    model = ProxyModel(
        "planner", "anthropic", upstream_model="claude-x", extra_params={"timeout": 9}
    )
    assert model.entry("http://up")["litellm_params"] == {
        "model": "anthropic/claude-x",
        "api_base": "http://up",
        "api_key": "scripted-upstream-key",
        "timeout": 9,
    }


def test_proxy_that_exits_at_once_reports_its_output(fake_litellm: Path) -> None:
    """A proxy that dies before it is healthy raises with its output, and cleans up."""
    fake_litellm.write_text("#!/bin/sh\necho 'config broken: no model_list' \nexit 3\n")
    proxy = LiteLLMProxy("http://127.0.0.1:9", executable=fake_litellm, startup_timeout_s=10)
    with pytest.raises(ProxyStartError, match="exited with code 3") as caught:
        proxy.start()
    assert "config broken: no model_list" in str(caught.value)
    assert proxy.pid is None
