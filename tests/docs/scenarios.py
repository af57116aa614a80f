"""What the scripted model answers for each page of the docs, and the files a page's
examples find in their working folder. Keyed by page; a page with no scenario gets "Done."
to every request."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from nisse_llm.testing import Script, ToolUse, anthropic_failure, reply, truncated
from tests.tools.readme_agent import agent_turns

__all__ = ["SCENARIOS"]

Scenario = Callable[[Script, Path], None]

SCENARIOS: dict[str, Scenario] = {}


def _getting_started(script: Script, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("Ship on Friday.\n")
    script.when(reply("Hello!"), user_text="Say hello.")
    script.when(
        reply("Reading it.", ToolUse("read_file", {"path": "notes.txt"})),
        user_text="What does notes.txt say?",
    )
    script.when(reply("It says: Ship on Friday."), tool_result="Ship on Friday.")


SCENARIOS["docs/getting-started.md"] = _getting_started


def _tools(script: Script, workdir: Path) -> None:
    verdict = {"decision": "approve", "reasons": ["add() is correct"]}
    script.when(reply(ToolUse("Verdict", verdict)), user_text="Review calc.py.")
    script.when(reply("5"), reply("5"), user_text="Add 2 and 3.")
    # Every request of the agent's run holds its task (the last user text may be a
    # placeholder the messages route adds after an assistant turn).
    script.when(*agent_turns(workdir), where=lambda r: "Make check.py pass." in r.user_texts)


SCENARIOS["docs/guides/tools.md"] = _tools


def _task_files(script: Script, workdir: Path) -> None:
    (workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script.when(
        reply("Let me read it.", ToolUse("read_file", {"path": "calc.py"})),
        user_text="Why does test_add fail?",
        model="claude-opus-5-5",
    )


SCENARIOS["docs/guides/task-files.md"] = _task_files


def _agent_loop(script: Script, workdir: Path) -> None:
    (workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workdir / "notes.txt").write_text("Ship on Friday.\n")
    fixed = "def add(a, b):\n    return a + b\n"
    # The planner (claude-opus-5-5, messages route) gives typed answers natively: as JSON.
    script.when(
        reply(json.dumps({"steps": ["make add() add"]})),
        user_text="Fix add() in calc.py.",
        model="claude-opus-5-5",
    )
    script.when(
        reply("Reading it.", ToolUse("read_file", {"path": "calc.py"})),
        user_text="Fix add() in calc.py.",
    )
    script.when(
        reply(ToolUse("write_file", {"path": "calc.py", "text": fixed})), tool_result="a - b"
    )
    script.when(reply("Fixed: add() now adds."), tool_result="wrote")
    script.when(
        reply(ToolUse("read_file", {"path": "notes.txt"})),
        user_text="Read notes.txt, then decide.",
    )
    script.when(
        reply(json.dumps({"fixed": True, "summary": "add() adds"})), user_text="Is calc.py fixed?"
    )
    script.when(reply("Hello!"), user_text="Say hello.")
    script.when(
        reply(
            "Pushing, and reading it once more.",
            ToolUse("git_push", {"branch": "fix-add"}),
            ToolUse("read_file", {"path": "calc.py"}),
        ),
        user_text="Push the fix to a branch.",
    )
    script.when(
        reply("Pushed fix-add."), where=lambda r: any("pushed fix-add" in t for t in r.tool_results)
    )
    script.when(reply("calc.py is tidy."), user_text="Tidy calc.py.")
    script.when(reply("notes.txt is tidy."), user_text="Tidy notes.txt.")


SCENARIOS["docs/guides/agent-loop.md"] = _agent_loop


def _cost(script: Script, workdir: Path) -> None:
    too_long = "prompt is too long: 250000 tokens > 200000 maximum"
    script.when(
        anthropic_failure(400, "invalid_request_error", too_long),
        reply("The build failed on one test."),
        model="claude-sonnet-5-5",
    )


SCENARIOS["docs/guides/cost.md"] = _cost


def _errors(script: Script, workdir: Path) -> None:
    script.messages(
        reply("Building."),
        anthropic_failure(529, "overloaded_error", "Overloaded"),
        anthropic_failure(
            400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
        ),
        truncated("The build log says"),
    )


SCENARIOS["docs/guides/errors.md"] = _errors


def _front_page(script: Script, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("Ship on Friday.\n")
    script.when(
        reply(ToolUse("read_file", {"path": "notes.txt"})), user_text="What does notes.txt say?"
    )
    script.when(reply("It says: Ship on Friday."), tool_result="Ship on Friday.")


SCENARIOS["README.md"] = _front_page
SCENARIOS["docs/index.md"] = _front_page


def _mcp(script: Script, workdir: Path) -> None:
    git = ["git", "-C", str(workdir), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "Fix add() in calc.py"], check=True
    )
    script.when(
        reply(ToolUse("git_log", {"repo_path": ".", "max_count": 1})),
        user_text="What was the last commit about?",
    )
    script.when(reply("It fixed add() in calc.py."), tool_result="Message: Fix add() in calc.py")
    script.when(
        reply(ToolUse("git_log", {"repo_path": ".", "max_count": 1})),
        user_text="Who made the last commit?",
    )
    script.when(reply("Ada did."), tool_result="Message: Fix add() in calc.py")


SCENARIOS["docs/guides/mcp.md"] = _mcp
