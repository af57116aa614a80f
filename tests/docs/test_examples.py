"""Every python example in README.md and docs/ runs as written, in the test suite.

Each page's blocks run in order in one namespace, in a fresh working folder holding the
page's files (``<!-- file: NAME -->`` blocks) and, unless the page writes its own, the
getting-started page's ``nisse.toml``. The proxy URL and token come from the environment
(``NISSE_LLM_BASE_URL``, ``NISSE_LLM_TOKEN``), which wins over the file: a scripted upstream
in process for most pages, the real LiteLLM proxy in front of it for pages marked
``<!-- requires: proxy -->``. What the model answers is the page's scenario
(tests/docs/scenarios.py); any request a scenario leaves open is answered "Done.".
"""

from __future__ import annotations

import os
import sys
import tomllib
import types
from pathlib import Path

import pytest

import nisse_llm
from nisse_llm import load_settings
from nisse_llm.testing import Script, ScriptedServer
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.docs.conftest import answer_done
from tests.docs.pages import DOCS, Page, all_pages, read_page
from tests.docs.scenarios import SCENARIOS
from tests.mcp.helpers import mcp_git_bin

PAGES = all_pages()
RUNNABLE = [page for page in PAGES if page.python]
#: The configuration every page starts from: the one the getting-started page shows.
GETTING_STARTED = read_page(DOCS / "getting-started.md")
DEFAULT_CONFIG = next(b.code for b in GETTING_STARTED.files if b.marker("file") == "nisse.toml")


def _params(pages: list[Page]) -> list[object]:
    return [
        pytest.param(page, id=page.name, marks=[pytest.mark.proxy] if page.needs_proxy else [])
        for page in pages
    ]


def _run(page: Page, workdir: Path, script: Script) -> None:
    """Write the page's files, queue its scenario, then run its blocks in one namespace."""
    (workdir / "nisse.toml").write_text(DEFAULT_CONFIG, encoding="utf-8")
    for block in page.files:
        (workdir / str(block.marker("file"))).write_text(block.code, encoding="utf-8")
    scenario = SCENARIOS.get(page.name)
    if scenario is not None:
        scenario(script, workdir)
    name = "docs_example_" + page.name.replace("/", "_").replace(".", "_").replace("-", "_")
    module = types.ModuleType(name)
    sys.modules[name] = module  # pydantic resolves a block's model annotations here
    try:
        for block in page.python:
            # Padded so a traceback names the Markdown file's own line numbers.
            code = compile("\n" * (block.line - 1) + block.code, page.name, "exec")
            try:
                exec(code, module.__dict__)
            except BaseException as exc:
                exc.add_note(f"in the example at {block.where}")
                raise
    finally:
        del sys.modules[name]
        nisse_llm.uninstrument()  # a page that turned telemetry on and failed leaves it off


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder, the examples' current directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", _params(RUNNABLE))
def test_page_examples_run(
    page: Page, workdir: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Every python block of the page runs as written, against the scripted model (through
    the real proxy where the page says so), and no request goes unanswered by design."""
    if any(block.marker("requires") == "mcp-server-git" for block in page.blocks):
        # The page runs the published server by its name, as a reader who installed it would.
        monkeypatch.setenv("PATH", f"{mcp_git_bin().parent}{os.pathsep}{os.environ['PATH']}")
    if page.needs_proxy:
        proxy: LiteLLMProxy = request.getfixturevalue("docs_proxy")
        upstream: ScriptedServer = request.getfixturevalue("docs_upstream")
        upstream.script.reset()
        monkeypatch.setenv("NISSE_LLM_BASE_URL", proxy.base_url)
        monkeypatch.setenv("NISSE_LLM_TOKEN", proxy.token)
        _run(page, workdir, upstream.script)
        script = upstream.script
    else:
        with ScriptedServer(Script(fallback=answer_done)) as server:
            monkeypatch.setenv("NISSE_LLM_BASE_URL", server.base_url)
            monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-docs-example")
            _run(page, workdir, server.script)
            script = server.script
    assert not script.unscripted, f"requests no turn answered: {script.unscripted}"
    assert script.pending() == 0, f"{page.name}: its scenario queued turns no example used"


def test_every_scenario_names_a_page_with_examples() -> None:
    """A scenario left behind by a moved or renamed page is an error, not dead code."""
    assert set(SCENARIOS) <= {page.name for page in RUNNABLE}


def test_the_examples_are_many_and_everywhere() -> None:
    """The collector finds the examples: the README and the guides each hold some."""
    names = {page.name for page in RUNNABLE}
    assert "README.md" in names
    assert "docs/getting-started.md" in names
    assert sum(len(page.python) for page in PAGES) >= 25


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(block, id=block.where)
        for page in PAGES
        for block in page.blocks
        if block.lang == "toml"
    ],
)
def test_toml_examples_parse(
    block: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every TOML block parses; a whole configuration (one with [llm] and [roles]) loads,
    requiring the roles it maps."""
    from tests.docs.pages import Block

    assert isinstance(block, Block)
    data = tomllib.loads(block.code)
    if "roles" in data and "llm" in data:
        path = tmp_path / "nisse.toml"
        path.write_text(block.code, encoding="utf-8")
        path.chmod(0o600)
        monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-docs-example")
        settings = load_settings(path, require_roles=tuple(data["roles"]))
        assert settings.pin().roles.names


def test_python_blocks_are_python() -> None:
    """A block that is not runnable Python says so by its language: none is left unmarked."""
    unmarked = [b.where for page in PAGES for b in page.blocks if b.lang in ("", "py")]
    assert not unmarked, (
        f"give these blocks a language (python runs; sh, text, toml do not): {unmarked}"
    )
