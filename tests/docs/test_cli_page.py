"""The online check the CLI page shows is what `config check --online` prints: the page's
configuration run through the real LiteLLM proxy, its output compared line by line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm.cli.main import EXIT_USAGE, main
from nisse_llm.testing import Script, ScriptedServer
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.docs.conftest import answer_done, litellm_bin
from tests.docs.pages import DOCS, read_page
from tests.integration.helpers import REQUEST_TIMEOUT_S

__all__ = ["litellm_bin"]

pytestmark = pytest.mark.proxy

PAGE = read_page(DOCS / "guides" / "cli.md")
#: The proxy URL the page prints; the test's proxy listens elsewhere.
PAGE_URL = "http://127.0.0.1:4000"


@pytest.fixture(scope="module")
def page_proxy(litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """A proxy serving what the page says it serves: two models the price map knows and an
    alias it does not."""
    models = [
        ProxyModel("gpt-5.4-mini", "openai"),
        ProxyModel("claude-opus-5-5", "anthropic"),
        ProxyModel("my-alias", "openai", upstream_model="team-model"),
    ]
    with (
        ScriptedServer(Script(fallback=answer_done)) as upstream,
        LiteLLMProxy(
            upstream.base_url,
            models=models,
            executable=litellm_bin,
            request_timeout_s=REQUEST_TIMEOUT_S,
        ) as proxy,
    ):
        yield proxy


def test_the_pages_online_check_is_what_the_cli_prints(
    page_proxy: LiteLLMProxy,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each role's model, route, ceiling and verdict as the page shows them, and the exit
    code it names."""
    (config,) = [b for b in PAGE.files if b.marker("file") == "online-check.toml"]
    (shown,) = [b for b in PAGE.blocks if b.lang == "text" and b.code.startswith("online:")]
    path = tmp_path / "online-check.toml"
    path.write_text(config.code.replace(PAGE_URL, page_proxy.base_url), encoding="utf-8")
    path.chmod(0o600)
    monkeypatch.setenv("NISSE_LLM_TOKEN", page_proxy.token)
    code = main(["config", "check", "--online", "--config", str(path)])
    out = capsys.readouterr().out.replace(page_proxy.base_url, PAGE_URL)
    printed = out[out.index("online: asking") :]
    assert printed.splitlines() == shown.code.splitlines()
    assert code == EXIT_USAGE
