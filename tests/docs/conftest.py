"""The environment the documentation's examples run in: a scripted upstream, and for pages
that say so a real LiteLLM proxy in front of it serving the model names the docs use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm.testing import RecordedRequest, Script, ScriptedServer, Turn, reply
from nisse_llm.testing.proxy import LiteLLMProxy, ProxyModel
from tests.integration.conftest import litellm_bin  # the loud "no proxy" failure, shared
from tests.integration.helpers import REQUEST_TIMEOUT_S

__all__ = ["DOCS_MODELS", "docs_proxy", "docs_upstream", "litellm_bin"]

#: Every model name the examples use, as a proxy serves them: Anthropic models through
#: an Anthropic entry, the others through an OpenAI one (the scripted upstream speaks both).
DOCS_MODELS = tuple(
    ProxyModel(name, "anthropic" if name.startswith("claude-") else "openai")
    for name in (
        "claude-sonnet-5-5",
        "claude-opus-5-5",
        "claude-haiku-5-5",
        "gpt-6-astra",
        "gpt-5.6-sol",
        "gpt-5.4-mini",
    )
)


def answer_done(request: RecordedRequest) -> Turn:
    """What the scripted model says to any request a page's scenario does not script."""
    return reply("Done.")


# Module-scoped: the proxy and its upstream stop when the examples' module ends, so no
# process or pooled connection of theirs outlives it into the tests that count sockets.
@pytest.fixture(scope="module")
def docs_upstream() -> Iterator[ScriptedServer]:
    """The scripted upstream behind the docs' proxy."""
    with ScriptedServer(Script(fallback=answer_done)) as server:
        yield server


@pytest.fixture(scope="module")
def docs_proxy(docs_upstream: ScriptedServer, litellm_bin: Path) -> Iterator[LiteLLMProxy]:
    """One real LiteLLM proxy for every page that runs through the proxy."""
    with LiteLLMProxy(
        docs_upstream.base_url,
        models=DOCS_MODELS,
        executable=litellm_bin,
        request_timeout_s=REQUEST_TIMEOUT_S,
    ) as running:
        yield running
