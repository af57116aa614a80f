"""The files an operator starts from pass `config check --online` against the dev proxy
config the docs give: `nisse-llm config init`'s starter and config/nisse-llm.example.toml,
each role served by config/litellm.dev.yaml's entries (run in front of the scripted
upstream instead of the providers, with its own settings)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm.cli.main import EXIT_OK, main
from nisse_llm.testing import ScriptedServer
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.config.helpers import EXAMPLE
from tests.integration.helpers import dev_proxy_config, dev_proxy_models, fresh_script

pytestmark = pytest.mark.proxy

ROLES = ("executor", "planner", "delegate", "consultant")


@pytest.fixture(scope="module")
def dev_proxy(upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A proxy with config/litellm.dev.yaml's model entries and settings (its auth aside:
    the kit's one-token hook stands in for the master key)."""
    config = dev_proxy_config(litellm_bin)
    settings = {key: config[key] for key in ("litellm_settings", "router_settings")}
    with LiteLLMProxy(
        upstream.base_url,
        models=dev_proxy_models(config),
        executable=litellm_bin,
        settings=settings,
    ) as running:
        yield running


def _starter(folder: Path) -> Path:
    assert main(["config", "init", str(folder)]) == EXIT_OK
    return folder / "nisse.toml"


def _example(folder: Path) -> Path:
    return Path(shutil.copy(EXAMPLE, folder / "nisse.toml"))


@pytest.mark.parametrize("write", [_starter, _example], ids=["config-init", "example-toml"])
def test_the_starting_file_passes_the_online_check_against_the_dev_proxy(
    write: object,
    tmp_path: Path,
    dev_proxy: LiteLLMProxy,
    upstream: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Written as shipped, pointed at the dev proxy by the environment alone: every role's
    model is served, within its limits, and the check exits 0 spending no tokens."""
    assert callable(write)
    path = write(tmp_path)
    monkeypatch.setenv("NISSE_LLM_BASE_URL", dev_proxy.base_url)
    monkeypatch.setenv("NISSE_LLM_TOKEN", dev_proxy.token)
    capsys.readouterr()
    with fresh_script(upstream) as script:
        code = main(["config", "check", "--online", "--config", str(path)])
        assert script.requests == []
    out, err = capsys.readouterr()
    assert code == EXIT_OK, out + err
    lines = [" ".join(line.split()) for line in out[out.index("online: asking") :].splitlines()]
    assert "proxy: answered; token: accepted" in lines
    for role in ROLES:
        row = next(line for line in lines if line.startswith(role + " "))
        assert row.endswith(" yes ok"), row
