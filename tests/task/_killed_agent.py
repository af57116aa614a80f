"""An agent the resume test kills between logging a tool call and logging its result.

Run as ``python -m tests.task._killed_agent PATH``: it begins the task, asks the
planner, logs the reply (a tool call), prints ``tool call logged`` and then "runs the
tool" for a minute, during which the test sends SIGKILL.
"""

from __future__ import annotations

import sys
import time

from nisse_llm.events.canonical import UserText
from nisse_llm.task.logstore import FileTaskStore
from nisse_llm.testing import Script, ScriptedTransport, Tokens, ToolUse, reply
from nisse_llm.transport.routers import RoleRouter
from tests.corpus import READ_FILE
from tests.task.helpers import make_pin

QUESTION = "Why does test_add fail?"
FIRST_USAGE = Tokens(input=120, output=15)


def main(path: str) -> None:
    pin = make_pin()
    store = FileTaskStore(path).begin(pin)
    script = Script().when(
        reply("Let me read it.", ToolUse("read_file", {"path": "add.py"}), usage=FIRST_USAGE),
        user_text=QUESTION,
    )
    log = [store.append_event(UserText(text=QUESTION)).event]
    with RoleRouter.from_pin(pin, store=store, transport=ScriptedTransport(script)) as llm:
        store.append_events(llm.complete("planner", log, [READ_FILE]))
    print("tool call logged", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1])
