"""A task's driver in a process of its own, for the tests that kill it.

``python -m tests.agent._driver hold KEY TASK_STORE``: opens task ``KEY`` of the store
``TASK_STORE`` (a folder or a database URL) with `Task.open`, prints ``held`` and waits
with the task open until it is killed.

``python -m tests.agent._driver reopen KEY TASK_STORE COUNT``: opens and closes task
``KEY`` COUNT times, holding it a few milliseconds each time, printing ``opened`` after
the first; a `TaskBusy` on any of them ends it with a traceback and exit status 1.

``python -m tests.agent._driver call PATH EFFECTS``: runs `cut_run`'s task in the file
``PATH`` (tool runs noted in ``EFFECTS``) until its second model call is out, where the
reply never comes in time: a test kills it there (`acut_run` is the same with
`AsyncTask`, run in the test's own process).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nisse_llm.agent import AsyncTask, Task
from nisse_llm.config.settings import Settings, load_settings
from nisse_llm.testing import slow
from nisse_llm.tools import Toolbox
from tests.agent.helpers import QUESTION, SideEffects, scripted, two_steps
from tests.task.helpers import BASE_URL, ROLES, TOKEN

ROOT = Path(__file__).resolve().parents[2]


def keyed_settings(task_store: str) -> Settings:
    """Settings from arguments alone whose tasks live in ``task_store``."""
    return load_settings(
        None, llm={"base_url": BASE_URL, "token": TOKEN}, roles=ROLES, task_store=task_store
    )


def toolbox(tools: SideEffects) -> Toolbox:
    """``read_file`` (repeatable) and ``write_file`` (not)."""
    return Toolbox([tools.read_file, tools.write_file], repeatable={"read_file"})


def cut_run(path: Path, effects: Path) -> None:
    """Run `two_steps` with the task file ``path``; the second reply takes 60 s to come."""
    first, second, _ = two_steps()
    llm = scripted(path, first, slow(second, 60))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        task.run("executor", tools=toolbox(SideEffects(effects)))


async def acut_run(path: Path, effects: Path) -> None:
    """`cut_run` with `AsyncTask`."""
    first, second, _ = two_steps()
    llm = scripted(path, first, slow(second, 60), asynchronous=True)
    async with llm, AsyncTask.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        await task.run("executor", tools=toolbox(SideEffects(effects)))


def child(*args: str) -> subprocess.Popen[bytes]:
    """``python -m tests.agent._driver ARGS`` started, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.agent._driver", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@contextmanager
def holding(key: str, task_store: str) -> Iterator[subprocess.Popen[bytes]]:
    """A process holding task ``key`` open (``hold``), SIGKILLed at the end."""
    process = child("hold", key, task_store)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line == b"held\n", process.stderr.read() if process.stderr else b""
        yield process
    finally:
        process.kill()
        process.communicate(timeout=60)


def hold(key: str, task_store: str) -> None:
    settings = keyed_settings(task_store)
    with Task.open(key, settings.pin(), settings=settings, prompt=QUESTION):
        print("held", flush=True)
        while True:
            time.sleep(60)


def reopen(key: str, task_store: str, count: int) -> None:
    settings = keyed_settings(task_store)
    pin = settings.pin()
    for n in range(count):
        with Task.open(key, pin, settings=settings, prompt=QUESTION):
            if n == 0:
                print("opened", flush=True)
            time.sleep(0.005)


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "reopen":
        reopen(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        cut_run(Path(sys.argv[2]), Path(sys.argv[3]))
