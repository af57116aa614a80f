"""Provider names for MCP tools: unique, reversible, within the providers' rules, and stable."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from nisse_llm.events.tools import TOOL_NAME_PATTERN
from nisse_llm.mcp.names import clean_text, provider_names

_VALID = re.compile(TOOL_NAME_PATTERN)
servers = st.sampled_from(["git", "fs", "a.b", "x" * 70])
tool_names = st.one_of(
    st.text(max_size=100),
    st.text(alphabet="ab._/-", max_size=80),
    st.from_regex(r"[a-z_]{60,70}", fullmatch=True),
)


@given(st.lists(st.tuples(servers, tool_names), max_size=30))
def test_names_are_unique_reversible_and_valid(tools: list[tuple[str, str]]) -> None:
    """Any MCP names on any servers map one-to-one onto names the providers accept."""
    names = provider_names(tools)
    assert set(names.provider) == set(tools)
    assert all(_VALID.match(name) for name in names.provider.values())
    assert len(set(names.provider.values())) == len(names.provider)
    assert all(names.original[names.provider[key]] == key for key in names.provider)


@given(st.lists(st.tuples(servers, tool_names), max_size=30))
def test_the_same_tools_map_the_same_way_every_time(tools: list[tuple[str, str]]) -> None:
    """A resumed task's process maps the same servers' tools to the same names."""
    assert provider_names(tools).provider == provider_names(list(tools)).provider


def test_valid_unique_names_stay_and_clashes_are_prefixed_by_server() -> None:
    """Names the providers take stay as they are; one two servers share is prefixed."""
    names = provider_names([("git", "status"), ("git", "log"), ("fs", "log")]).provider
    assert names[("git", "status")] == "status"
    assert names[("git", "log")] == "git__log"
    assert names[("fs", "log")] == "fs__log"


def test_refused_names_keep_their_readable_part() -> None:
    """A dotted name reads as itself with underscores, then a hash that keeps it apart."""
    name = provider_names([("git", "repo.status")]).provider[("git", "repo.status")]
    assert re.fullmatch(r"repo_status_[0-9a-f]{8}", name)


def test_clean_text_drops_escapes_and_control_characters() -> None:
    """Terminal escapes, bells and bidi overrides go; newlines, tabs and text stay."""
    assert clean_text("a\x1b[31mred\x1b[0m\x07\tb\n\u202ec\x00") == "ared\tb\nc"
