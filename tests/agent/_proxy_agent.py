"""An agent through the real proxy, killed mid-tool: run as
``python -m tests.agent._proxy_agent BASE_URL TOKEN ROLE TASK EFFECTS``.

It opens the task with `Task.open` and runs ``ROLE`` with a repeatable ``read_file`` and a
non-repeatable ``write_file``; ``write_file`` notes its effect, prints ``ready`` and waits
there to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from nisse_llm import Task, Toolbox, load_settings
from nisse_llm.config.settings import Pin

QUESTION = "Fix calc.py."
ROLES = {
    "planner": "claude-opus-5-5",  # the messages route
    "executor": "gpt-6-astra",  # the Responses route
    "delegate": "claude-haiku-5-5",
    "consultant": "gpt-6-astra",
}


def pin_of(base_url: str, token: str) -> Pin:
    return load_settings(llm={"base_url": base_url, "token": token}, roles=ROLES).pin()


def tools(effects: Path, *, hang: bool) -> Toolbox:
    def read_file(path: str) -> str:
        """Read a file."""
        return f"def add(a, b):\n    return a - b  # {path}"

    def write_file(path: str, text: str) -> str:
        """Write a file."""
        with effects.open("a", encoding="utf-8") as out:
            out.write(f"{path}\n")
        if hang:
            print("ready", flush=True)
            time.sleep(60)
        return f"wrote {path}"

    return Toolbox([read_file, write_file], repeatable={"read_file"})


def main(base_url: str, token: str, role: str, task: str, effects: str) -> None:
    with Task.open(task, pin_of(base_url, token), prompt=QUESTION) as opened:
        opened.run(role, tools=tools(Path(effects), hang=True))
    raise SystemExit("not killed")


if __name__ == "__main__":
    main(*sys.argv[1:6])
