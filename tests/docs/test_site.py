"""The documentation site builds with ``mkdocs build --strict``, offline: no broken link or
anchor, no page left out of the navigation, no unresolved reference, no API name that does
not exist, nothing fetched from the network."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.pages import REPO

#: A dead loopback port: any fetch through urllib or httpx during the build fails loudly.
NO_NETWORK = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        **dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), NO_NETWORK),
    }
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_every_page_is_built(site: Path) -> None:
    """Each Markdown page under docs/ becomes a page of the site."""
    for page in (REPO / "docs").rglob("*.md"):
        relative = page.relative_to(REPO / "docs").with_suffix("")
        built = site / ("index.html" if relative.name == "index" else relative / "index.html")
        if relative.name == "index":
            built = site / relative.parent / "index.html"
        assert built.is_file(), f"{page} was not built ({built})"


@pytest.mark.parametrize("module", ["nisse_llm", "nisse_llm.testing", "nisse_llm.task.logstore"])
def test_every_public_name_has_a_generated_entry(site: Path, module: str) -> None:
    """The reference holds a docstring-generated entry for each name of the module's
    ``__all__`` (mkdocstrings anchors each one by its dotted path; a name the package
    re-exports may stand under ``nisse_llm`` instead)."""
    html = "".join(p.read_text(encoding="utf-8") for p in (site / "reference").rglob("*.html"))
    names = importlib.import_module(module).__all__
    missing = [
        name
        for name in names
        if f'id="{module}.{name}"' not in html and f'id="nisse_llm.{name}"' not in html
    ]
    assert not missing, f"no generated reference entry for {module}: {missing}"


def test_clients_show_the_methods_they_inherit(site: Path) -> None:
    """The routers' and clients' entries list the methods their private bases define."""
    html = (site / "reference" / "clients" / "index.html").read_text(encoding="utf-8")
    for member in (
        "RoleRouter.complete",
        "RoleRouter.headroom",
        "RoleRouter.client_for",
        "LiteLLMClient.complete",
        "AsyncLiteLLMClient.stream",
        "AnthropicPassthroughClient.model_info",
    ):
        assert f'id="nisse_llm.{member}"' in html, member


def test_the_site_asks_no_outside_host_for_fonts(site: Path) -> None:
    """The built pages load no web fonts from outside (the theme's font loading is off)."""
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis" not in index
    assert "fonts.gstatic" not in index
