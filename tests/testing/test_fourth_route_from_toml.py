"""A fourth route chosen by an operator: a copy of the chat route registered from the test
tree (its own module and one table registration) is named as a role's ``route`` in a TOML
file, loaded with `load_settings`, and a router's call for that role goes down it to the
testing kit's loopback server, with no package module changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nisse_llm import AssistantText, RoleRouter, UserText, load_settings
from nisse_llm.errors import ConfigError
from nisse_llm.routes import ROUTE_TABLE
from nisse_llm.stream.deltas import TextDelta
from nisse_llm.testing import Script, ScriptedServer, Tokens, reply
from tests.testing.fourth_route_copy import CHAT_COPY, NAME, PATH, ChatCopyClient

SAID = "Copied, and answered."
TOML = """\
[llm]
base_url = "{base_url}"
token = "sk-test-fourth-route"

[roles.executor]
model = "gpt-4.1-mini"
route = "{route}"
temperature = 0.5
"""


@pytest.fixture
def fourth_route() -> Iterator[None]:
    """The copy registered in the table for one test, then taken out."""
    ROUTE_TABLE.register(CHAT_COPY)
    try:
        yield
    finally:
        ROUTE_TABLE.unregister(NAME)


def _settings_file(tmp_path: Path, base_url: str, route: str = NAME) -> Path:
    path = tmp_path / "nisse-llm.toml"
    path.write_text(TOML.format(base_url=base_url, route=route), encoding="utf-8")
    path.chmod(0o600)  # it holds the token
    return path


def test_a_fourth_route_chosen_in_toml_serves_the_role(fourth_route: None, tmp_path: Path) -> None:
    """The role pinned to the registered route completes and streams through its client,
    each request posted to the route's own path with the role's options."""
    script = Script().add(NAME, reply(SAID, usage=Tokens(input=12, output=4)), reply(SAID))
    with ScriptedServer(script) as server:
        settings = load_settings(_settings_file(tmp_path, server.base_url), require_roles=())
        pin = settings.pin()
        assert pin.route("executor") == NAME
        assert pin.record()["roles"]["executor"]["route"] == NAME
        with RoleRouter.from_pin(pin) as router:
            assert type(router.client_for("executor")) is ChatCopyClient
            reply_ = router.completion("executor", [UserText(text="Copy?")], None)
            with router.stream("executor", [UserText(text="Stream?")], None) as stream:
                shown = "".join(d.text for d in stream if isinstance(d, TextDelta))
    assert reply_.events == [AssistantText(text=SAID, model="gpt-4.1-mini")]
    assert reply_.usage.input == 12
    assert shown == SAID
    sent = script.requests_to(NAME)
    assert [(r.path, r.route) for r in sent] == [(PATH, NAME)] * 2
    assert sent[0].json["model"] == "gpt-4.1-mini"
    assert sent[0].json["temperature"] == 0.5
    assert sent[0].json["messages"] == [{"role": "user", "content": "Copy?"}]
    assert sent[1].json["stream"] is True


def test_a_fourth_route_not_registered_is_refused_when_the_toml_is_loaded(
    tmp_path: Path,
) -> None:
    """Without its registration the same file is a `ConfigError` naming the key and the
    routes the table holds."""
    path = _settings_file(tmp_path, "http://127.0.0.1:9")
    with pytest.raises(ConfigError, match=rf"roles\.executor\.route.*{NAME}.*openai_chat"):
        load_settings(path, require_roles=())
