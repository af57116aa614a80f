"""A task of an operator's fleet, opened the README's way: run as
``python -m tests.integration._operator_agent KEY MODE``.

Settings come from ``NISSE_CONFIG`` and the environment (the store from
``NISSE_TASK_STORE``); the task is opened with ``Task.open(KEY, settings.pin(),
settings=settings)``, its MCP servers started from the pin in force, and the executor run
with a repeatable ``wait_here`` beside them. In ``hang`` mode ``wait_here`` prints ``ready``
and waits to be killed; in ``finish`` mode it returns, and the run's end is printed as a
JSON line: the answer, the executor's model in force, the pin changes, the servers started
and the tools offered. Log records of WARNING and above go to stderr, one line each.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from nisse_llm import McpServer, Task, Toolbox, load_settings


def prompt_of(key: str) -> str:
    return f"Task {key}: wait once, then say done."


def main(key: str, mode: str) -> None:
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s"
    )
    settings = load_settings()

    def wait_here(step: int) -> str:
        """Wait at a step of the task."""
        if mode == "hang":
            print("ready", flush=True)
            time.sleep(120)
        return f"waited at step {step}"

    with Task.open(key, settings.pin(), settings=settings, prompt=prompt_of(key)) as task:
        servers = McpServer.from_pin(task.pin, settings)
        with Toolbox.from_mcp(*servers, tools=[wait_here], repeatable=["wait_here"]) as box:
            result = task.run("executor", tools=box)
            report = {
                "text": result.text,
                "executor": task.pin.model_for("executor"),
                "changes": list(task.pin_changes),
                "servers": [server.name for server in servers],
                "tools": [spec.name for spec in box.specs],
            }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
