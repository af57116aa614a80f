"""The published mcp-server-git, installed by the Makefile, on a temporary repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nisse_llm import Toolbox, ToolCall
from nisse_llm.mcp import McpServer


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository with one commit and one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run([*git, "add", "calc.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add calc"], check=True)
    (repo / "notes.txt").write_text("todo\n")
    return repo


def test_git_tools_answer_on_a_real_repository(mcp_git: Path, repository: Path) -> None:
    """The git server's tools are listed, its read-only ones repeatable, and its log and
    status describe the repository."""
    server = McpServer.stdio(mcp_git, ["--repository", str(repository)], name="git")
    with Toolbox.from_mcp(server) as box:
        names = {spec.name for spec in box.specs}
        assert {"git_status", "git_log", "git_commit"} <= names
        assert {"git_status", "git_log"} <= box.repeatable
        assert "git_commit" not in box.repeatable
        log, status = box.run(
            [
                ToolCall(call_id="a", tool="git_log", arguments={"repo_path": str(repository)}),
                ToolCall(call_id="b", tool="git_status", arguments={"repo_path": str(repository)}),
            ]
        )
    assert not log.is_error
    assert "Message: Add calc" in log.output
    assert "Author: Ada" in log.output
    assert "notes.txt" in status.output


def test_the_operator_picks_which_git_tools_are_exposed(mcp_git: Path, repository: Path) -> None:
    """``tools=`` leaves the model only the tools named (no commit, no checkout)."""
    server = McpServer.stdio(
        mcp_git, ["--repository", str(repository)], name="git", tools=["git_status", "git_log"]
    )
    with Toolbox.from_mcp(server) as box:
        assert [spec.name for spec in box.specs] == ["git_status", "git_log"]
