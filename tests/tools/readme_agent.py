"""The docs' three-tool agent (docs/guides/tools.md), extracted and run as written, and the
turns that drive it."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

from nisse_llm.testing import Script, ToolUse, reply
from nisse_llm.testing.turns import Reply

__all__ = ["BUGGY", "FIXED", "agent_turns", "readme_agent"]

README = Path(__file__).resolve().parents[2] / "docs" / "guides" / "tools.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
CHECK = "import calc\nassert calc.add(2, 3) == 5\nprint('ok')\n"


def readme_agent() -> types.ModuleType:
    """The docs block that defines ``run_agent``, executed as a module of its own."""
    blocks = [b for b in _BLOCK.findall(README.read_text()) if "def run_agent(" in b]
    assert len(blocks) == 1, "docs/guides/tools.md must hold exactly one block defining run_agent"
    module = types.ModuleType("readme_agent")
    sys.modules["readme_agent"] = module  # pydantic resolves the model's annotations here
    try:
        exec(compile(blocks[0], str(README), "exec"), module.__dict__)
    finally:
        del sys.modules["readme_agent"]
    return module


def agent_turns(workdir: Path) -> list[Reply]:
    """Read the file, fix it, run its check, say so, then give the typed outcome."""
    calc, check = workdir / "calc.py", workdir / "check.py"
    calc.write_text(BUGGY)
    check.write_text(CHECK)
    return [
        reply("Reading it first.", ToolUse("read_file", {"path": str(calc)})),
        reply(ToolUse("write_file", {"path": str(calc), "content": FIXED})),
        reply(ToolUse("run_command", {"argv": [sys.executable, str(check)]})),
        reply("Fixed add() and the check passes."),
        # Current models answer natively: the structured answer is the reply's text.
        reply('{"done": true, "summary": "add() fixed"}'),
    ]


def script_for(route: str, turns: list[Reply]) -> Script:
    script = Script()
    return script.chat(*turns) if route == "chat" else script.messages(*turns)


def results_sent(body: dict[str, Any]) -> list[str]:
    """Every tool result's text in a request body of any route."""
    out: list[str] = []
    if "input" in body:  # the Responses route: function-call outputs
        return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    for message in body["messages"]:
        if message["role"] == "tool":
            out.append(message["content"])
        elif isinstance(message.get("content"), list):
            out += [b["content"] for b in message["content"] if b.get("type") == "tool_result"]
    return out
