"""Every example names current models: none the pinned official SDKs mark deprecated, and
each one the pinned proxy can price (so the demo's budget refusal still works).

The examples are what an operator copies: the example TOML, the dev proxy config, the
demo, the README and the documentation pages. A model that reaches its end of life there breaks a fresh install's
first task, so the SDKs' own deprecation lists are the judge (the anthropic SDK's
``DEPRECATED_MODELS``; the openai SDK's "Deprecated values" list beside ``ChatModel``).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tomllib
from pathlib import Path

import anthropic._data
import openai.types.shared.chat_model
import pytest

from nisse_llm.testing import proxy
from nisse_llm.testing.demo import DEMO_MODELS
from tests.config.helpers import EXAMPLE, REPO

#: A model name as examples write it: a family, a dash, and a version with a digit.
MODEL_NAME = re.compile(r"\b(?:claude|gpt|o[1-9])-[A-Za-z0-9.-]*[0-9][A-Za-z0-9.-]*")


def _anthropic_deprecated() -> set[str]:
    return set(anthropic._data.DEPRECATED_MODELS)


def _openai_deprecated() -> set[str]:
    """The names in the "Deprecated values" list the openai SDK keeps beside ``ChatModel``."""
    source = inspect.getsource(openai.types.shared.chat_model)
    listing = source.split("Deprecated values:", 1)[1].split('"""', 1)[0]
    return set(re.findall(r'"([^"]+)"', listing))


DEPRECATED = _anthropic_deprecated() | _openai_deprecated()


def _bare(model: str) -> str:
    """The model without a LiteLLM provider prefix (``openai/gpt-5.5`` -> ``gpt-5.5``)."""
    return model.rsplit("/", 1)[-1]


def _example_models() -> dict[str, set[str]]:
    roles = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["roles"]
    toml_models = {
        _bare(value if isinstance(value, str) else value["model"]) for value in roles.values()
    }
    yaml_text = (REPO / "config" / "litellm.dev.yaml").read_text(encoding="utf-8")
    yaml_models = {
        _bare(name)
        for name in re.findall(r"^\s*-?\s*(?:model_name|model):\s*(\S+)", yaml_text, re.M)
    }
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    docs = "".join(page.read_text(encoding="utf-8") for page in pages)
    return {
        "config/nisse-llm.example.toml": toml_models,
        "config/litellm.dev.yaml": yaml_models,
        "nisse_llm/testing/demo.py": {_bare(model.name) for model in DEMO_MODELS},
        "nisse_llm/testing/proxy.py": set(proxy._LOCAL_MODELS),
        "README.md and docs/": {_bare(name) for name in MODEL_NAME.findall(docs)},
    }


def test_the_deprecation_lists_are_read() -> None:
    """The judge itself works: both SDKs' lists are found and hold models known to be old."""
    assert "claude-sonnet-4-5" in DEPRECATED
    assert "gpt-4.1-mini" in DEPRECATED
    assert "claude-sonnet-4-6" not in DEPRECATED


@pytest.mark.parametrize("where", sorted(_example_models()))
def test_examples_name_no_deprecated_model(where: str) -> None:
    """No example names a model the pinned official SDKs mark deprecated."""
    models = _example_models()[where]
    assert models, f"no model names found in {where}"
    old = sorted(models & DEPRECATED)
    assert not old, f"{where} names deprecated models {old}: pick current ones"


def _price_map() -> dict[str, object]:
    litellm_bin = os.environ.get("NISSE_LITELLM_BIN")
    assert litellm_bin, "NISSE_LITELLM_BIN is not set: run the suite through `make test`"
    venv = Path(litellm_bin).resolve().parents[1]
    found = sorted(
        venv.glob("lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json")
    )
    assert found, f"no LiteLLM price map under {venv}"
    prices: dict[str, object] = json.loads(found[0].read_text(encoding="utf-8"))
    return prices


def test_the_pinned_proxy_prices_every_example_model() -> None:
    """Each model the examples route to is in the pinned proxy's price map."""
    prices = _price_map()
    every = set().union(*_example_models().values())
    unpriced = sorted(model for model in every if model not in prices)
    assert not unpriced, f"the pinned proxy has no price for {unpriced}"
