"""Where a task lives and who drives it: a task key opens the configured store (a folder
or PostgreSQL), and `Task.open` is the one driver of its task on both stores (`TaskBusy`
for a second, taken over at once when the holder dies; readers never need the lease)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nisse_llm import (
    AssistantText,
    AsyncRoleRouter,
    ConfigError,
    FileTaskStore,
    RoleRouter,
    Task,
    TaskBusy,
    UserText,
)
from nisse_llm.config.settings import Settings
from nisse_llm.task.stores import open_store, open_task_store
from nisse_llm.testing import Script, ScriptedRouter, ScriptedTransport, reply
from tests.agent._driver import holding, keyed_settings, toolbox
from tests.agent.helpers import QUESTION, SideEffects, two_steps
from tests.task.stores import Place

ROOT = Path(__file__).resolve().parents[2]
#: The stated bound for a dead holder's lease on PostgreSQL (it runs out at most the
#: default lease, 15 s, after its last renewal), with a loaded machine's slack; a task
#: file's is released by the kernel as the process ends.
LEASE_FREED_S = 15.0 + 10.0


@pytest.fixture(params=("file", "postgres"))
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """The task's place, in either sync store: these tests open it by key, as a task does."""
    server = request.getfixturevalue("postgres") if request.param == "postgres" else None
    found = Place(request.param, tmp_path, server)
    yield found
    found.close()


def _settings(place: Place) -> Settings:
    """Settings whose tasks live where ``place`` keeps its task (its folder, or its server)."""
    if place.server is None:
        return keyed_settings(str(place.path.parent))
    return keyed_settings(place.server.url)


def _key(place: Place) -> str:
    """The task key that names ``place``'s task in its store."""
    return place.path.stem if place.server is None else place.key


def test_a_task_key_runs_and_resumes_the_task_in_the_configured_store(place: Place) -> None:
    """``Task.open(key, pin, settings=...)`` begins the task where the settings keep tasks
    (a file in the folder, a key in the database); reopened by its key, it is done with the
    same log, runs no model and returns the run's recorded result."""
    settings = _settings(place)
    key = _key(place)
    effects = SideEffects(place.path.parent / "effects.jsonl")
    llm = ScriptedRouter({"executor": two_steps()}, store=open_task_store(key, settings))
    with (
        llm,
        Task.open(key, llm.pin, router=llm, prompt=QUESTION, settings=settings) as task,
    ):
        first = task.run("executor", tools=toolbox(effects))
        assert first.text == "Fixed it."
        history = task.history
    llm.store.close()  # type: ignore[union-attr]

    stored = place.lines()
    assert b"Fixed it." in stored[-2] + stored[-1]
    assert (place.path.exists()) == (place.kind == "file")
    with Task.open(key, llm.pin, settings=settings, prompt=QUESTION) as again:
        assert again.done
        assert again.history == history
        assert again.run("executor", tools=toolbox(effects)) == first
    assert place.lines() == stored


def test_which_strings_are_task_keys(tmp_path: Path) -> None:
    """A plain name is a key in the configured folder; a path separator, a ``.jsonl``
    suffix or a `Path` make a file path; a name that is neither is refused."""
    settings = keyed_settings(str(tmp_path / "tasks"))
    cases = {
        "fix-issue-123": tmp_path / "tasks" / "fix-issue-123.jsonl",
        "task.jsonl": Path("task.jsonl"),
        f"{tmp_path}/fix": tmp_path / "fix",
        "sub/fix": Path("sub/fix"),
    }
    for given, expected in cases.items():
        store, owned = open_store(given, settings)
        assert (store.path, owned) == (expected, True), given
    assert open_store(Path("fix"), settings)[0].path == Path("fix")
    with pytest.raises(ConfigError, match="task key 'fix issue'"):
        open_store("fix issue", settings)


def test_a_key_uses_the_settings_found_when_none_are_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``settings``, a key opens the store the settings `load_settings` finds name
    (here ``./nisse.toml``'s ``task_store``, a folder beside it)."""
    for name in list(os.environ):
        if name.startswith("NISSE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NISSE_LLM_TOKEN", "sk-task-key-0123456789")
    (tmp_path / "nisse.toml").write_text(
        'task_store = "kept"\n[llm]\nbase_url = "http://127.0.0.1:4000"\n'
        '[roles]\nexecutor = "gpt-4.1-mini"\n'
    )
    pin = keyed_settings(str(tmp_path)).pin()
    with Task.open("fix-issue-123", pin, prompt=QUESTION) as task:
        assert task.store.path.resolve() == tmp_path / "kept" / "fix-issue-123.jsonl"
    events = FileTaskStore(tmp_path / "kept" / "fix-issue-123.jsonl").read().events
    assert [r.event for r in events] == [UserText(text=QUESTION)]


def _show(key: str, task_store: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NISSE_")}
    done = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", "show", key, "--store", task_store],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_one_driver_per_task_and_a_dead_one_is_taken_over(place: Place) -> None:
    """While a process drives a task, a second `Task.open` gets `TaskBusy` naming it (host
    and pid) and since when, and reading (the store, ``nisse-llm task show``) works; once
    the holder is SIGKILLed, the task opens at once (a file) or within the stated bound
    (PostgreSQL)."""
    settings = _settings(place)
    key = _key(place)
    task_store = settings.task_store.get_secret_value()  # type: ignore[union-attr]
    pin = settings.pin()
    before = datetime.now(UTC)
    with holding(key, task_store) as holder:
        with pytest.raises(TaskBusy) as caught:
            Task.open(key, pin, settings=settings)
        busy = caught.value
        assert busy.holder == f"{socket.gethostname()} pid {holder.pid}"
        assert busy.since is not None
        assert before - timedelta(seconds=5) <= busy.since <= datetime.now(UTC)
        assert busy.task == (str(place.path) if place.kind == "file" else key)
        assert f"held by {busy.holder} since" in str(busy)
        with open_task_store(key, settings) as reader:
            assert [r.event for r in reader.read().events] == [UserText(text=QUESTION)]
        assert f"task {key}:" in _show(key, task_store)
    killed = time.monotonic()
    while True:
        try:
            task = Task.open(key, pin, settings=settings)
            break
        except TaskBusy:
            assert place.kind == "postgres", "a dead holder's file lease outlived it"
            assert time.monotonic() - killed < LEASE_FREED_S
            time.sleep(0.02)
    with task:
        task.say("taken over")
        assert task.history == [UserText(text=QUESTION), UserText(text="taken over")]
    with Task.open(key, pin, settings=settings) as again:  # closing released it
        assert len(again.history) == 2


def test_plain_writers_of_a_task_file_never_need_the_lease(tmp_path: Path) -> None:
    """A task file's lease binds only drivers: another `TaskStore` on the file appends
    while a `Task` holds it, and a second `Task` on it is refused."""
    path = tmp_path / "task.jsonl"
    llm = ScriptedRouter({"executor": ["Done."]}, store=FileTaskStore(path))
    with Task.open(path, llm.pin, router=llm, prompt=QUESTION) as task:
        with FileTaskStore(path) as other:
            other.append_event(UserText(text="from another writer"))
        with pytest.raises(TaskBusy, match="another driver holds this task"):
            Task.open(path, llm.pin)
        assert task.run("executor", tools=None).text == "Done."
    assert (tmp_path / "task.jsonl.lease").exists()
    with Task.open(path, llm.pin) as again:
        assert again.done


def _fds_on(path: Path) -> int:
    """How many descriptors of this process are open on ``path``."""
    fds = Path("/proc/self/fd")
    return sum(os.path.realpath(fds / fd) == str(path.resolve()) for fd in os.listdir(fds))


def test_a_router_given_a_task_key_records_there_and_closes_what_it_opened(
    place: Place,
) -> None:
    """``RoleRouter.from_pin(pin, store=key)`` and the async router record each call in
    the configured store's task and close that store with the router: the file is let go,
    the database's lease freed for the next driver."""
    settings = _settings(place)
    key = _key(place)
    pin = settings.pin()
    script = Script(fallback=lambda request: reply("Hello."))
    say = [UserText(text="Say hello.")]
    with RoleRouter.from_pin(
        pin, store=key, settings=settings, transport=ScriptedTransport(script)
    ) as llm:
        assert llm.complete("executor", say, None) == [
            AssistantText(text="Hello.", model=llm.pin.model_for("executor"))
        ]

    async def again() -> None:
        async with AsyncRoleRouter.from_pin(
            pin, store=key, settings=settings, transport=ScriptedTransport(script)
        ) as allm:
            await allm.complete("executor", say, None)

    asyncio.run(again())
    if place.kind == "file":
        assert _fds_on(place.path) == 0
    with Task.open(key, pin, settings=settings) as task:
        assert task.usage.total.calls == 2
        assert task.unknown_calls == []


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_task_dropped_open_frees_its_lease_in_either_store(
    place: Place, asynchronous: bool
) -> None:
    """A task garbage-collected while open warns with `ResourceWarning` and gives its lease
    back at once, in a task file and in PostgreSQL (its session ended from the finalizer,
    for an `AsyncTask`'s async connection too): the task opens again in this process."""
    from nisse_llm import AsyncTask
    from tests.agent.test_task_handle import _dropped

    settings = _settings(place)
    key = _key(place)
    pin = ScriptedRouter({"executor": ["Done."]}).pin

    async def dropped_async() -> None:
        _dropped(await AsyncTask.open(key, pin, settings=settings, prompt=QUESTION))

    def dropped() -> None:
        if asynchronous:
            asyncio.run(dropped_async())
        else:
            _dropped(Task.open(key, pin, settings=settings, prompt=QUESTION))

    with pytest.warns(ResourceWarning, match=r"Task\(.*\) was never closed"):
        dropped()
    # The server ends the session as its socket closes: a moment, never the process's end
    # (the stated bound, not an idle machine's moment: CI's two cores are shared).
    deadline = time.monotonic() + LEASE_FREED_S
    while True:
        try:
            again = Task.open(key, pin, settings=settings)
            break
        except TaskBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with again:
        assert again.history == [UserText(text=QUESTION)]
