"""A task keeps the pin it began with: the pin given to `Task.open` only begins a new task,
a reopened task runs on its own pin (or the one ``task repin`` moved it to) with one WARNING
naming what differs, and a task pinned to another proxy is refused before any request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nisse_llm import AsyncTask, McpServer, Task, TaskPinMismatch, load_settings
from nisse_llm.cli.main import main
from nisse_llm.config.settings import Pin
from nisse_llm.task.logstore import AsyncFileTaskStore, FileTaskStore, TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.testing import Script, ScriptedTransport, reply
from nisse_llm.testing.postgres import LocalPostgres
from nisse_llm.transport.routers import AsyncRoleRouter, RoleRouter
from tests.task.helpers import BASE_URL, ROLES, TOKEN, make_pin

OTHER_URL = "http://127.0.0.1:4999"
GIT = {"command": "mcp-server-git", "args": ["--repository", "."]}


def _later_pin(**llm: Any) -> Pin:
    """The settings after the operator's edit: executor remapped, an MCP server added."""
    return load_settings(
        None,
        llm={"base_url": BASE_URL, "token": TOKEN, **llm},
        roles={**ROLES, "executor": "gpt-4.1"},
        mcp={"servers": {"git": GIT}},
    ).pin()


def _opener(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[], TaskStore]:
    """A new store object on one task each call: a task file, or a key in PostgreSQL."""
    if kind == "file":
        return lambda: FileTaskStore(tmp_path / "task.jsonl")
    server: LocalPostgres = request.getfixturevalue("postgres")
    url = server.database(f"pin_{tmp_path.name}".lower())
    return lambda: PostgresTaskStore(url, "t1")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_a_task_reopened_after_an_edit_runs_on_the_pin_it_began_with(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """Reopened with settings whose executor is remapped and which add an MCP server, the
    task calls the model it began with, starts no server (its pin names none), says once
    which keys differ, and a new task begun with the new settings uses the new map."""
    opener = _opener(kind, tmp_path, request)
    first = make_pin()
    script = Script().chat(reply("first"), reply("second"), reply("new"))
    with (
        opener() as store,
        RoleRouter.from_pin(first, store=store, transport=ScriptedTransport(script)) as llm,
        Task.open(store, first, router=llm, prompt="go") as task,
    ):
        task.step("executor")

    later = _later_pin()
    caplog.set_level(logging.WARNING, logger="nisse_llm")
    with (
        opener() as store,
        RoleRouter.from_pin(later, store=store, transport=ScriptedTransport(script)) as llm,
        Task.open(store, later, router=llm) as task,
    ):
        assert task.pin == first
        assert task.pin_changes == ("mcp_servers", "roles.executor")
        assert McpServer.from_pin(task.pin) == ()
        task.step("executor")  # the program replays its first step from the file
        task.say("and then?")
        task.step("executor")
    (warning,) = _warnings(caplog)
    assert "differs in mcp_servers, roles.executor" in warning

    fresh = FileTaskStore(tmp_path / "new.jsonl")
    with (
        RoleRouter.from_pin(later, store=fresh, transport=ScriptedTransport(script)) as llm,
        Task.open(fresh, later, router=llm, prompt="new") as task,
    ):
        assert task.pin_changes == ()
        assert [s.name for s in McpServer.from_pin(task.pin)] == ["git"]
        task.step("executor")
    assert [r.model for r in script.requests] == ["gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1"]


def test_the_token_comes_from_the_caller_at_every_opening(tmp_path: Path) -> None:
    """The token is never stored: a task reopened with a rotated token runs with it, and
    the token is no key of the pin (nothing differs, nothing is warned)."""
    path = tmp_path / "task.jsonl"
    with Task.open(path, make_pin(), prompt="go"):
        pass
    rotated = load_settings(
        None, llm={"base_url": BASE_URL, "token": "sk-rotated-987"}, roles=ROLES
    ).pin()
    with Task.open(path, rotated) as task:
        assert task.pin.token.get_secret_value() == "sk-rotated-987"
        assert task.pin_changes == ()
    data = path.read_bytes()
    assert TOKEN.encode() not in data
    assert b"sk-rotated-987" not in data


def test_a_task_pinned_to_another_proxy_is_refused_until_repinned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task file whose pin names another base URL is `TaskPinMismatch` naming both URLs,
    strict or not, with no request sent; ``task repin KEY --base-url`` moves it, after
    which it opens and calls the new URL."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    with Task.open(folder / "moved.jsonl", make_pin(OTHER_URL), prompt="go"):
        pass
    script = Script().chat(reply("on the new proxy"))
    here = make_pin()
    for strict in (False, True):
        with pytest.raises(TaskPinMismatch) as caught:
            Task.open(folder / "moved.jsonl", here, strict_pin=strict)
        assert f"names the proxy {OTHER_URL!r}, not the caller's {BASE_URL!r}" in str(caught.value)
    with pytest.raises(TaskPinMismatch):
        RoleRouter.from_pin(
            here, store=FileTaskStore(folder / "moved.jsonl"), transport=ScriptedTransport(script)
        )
    assert script.requests == []

    args = ["task", "repin", "moved", "--store", str(folder), "--base-url", BASE_URL]
    assert main([*args, "--by", "ops"]) == 0
    assert f"base_url -> {BASE_URL}" in capsys.readouterr().out
    store = FileTaskStore(folder / "moved.jsonl")
    with (
        RoleRouter.from_pin(here, store=store, transport=ScriptedTransport(script)) as llm,
        Task.open(store, here, router=llm) as task,
    ):
        assert task.pin.base_url == BASE_URL
        assert task.pin_changes == ()
        task.step("executor")
    ((sent,),) = [script.requests]
    assert sent.headers["host"] == "127.0.0.1:4000"


def test_a_repinned_task_calls_the_new_model_on_the_route_the_rules_give_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """After ``task repin KEY --role executor=claude-sonnet-4-5``, the reopened task's
    executor calls go to that model on the messages route, `task.pin` holds it and
    `task.pin_changes` names the role (the caller's settings still map the old model)."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    pin = make_pin()
    with Task.open(folder / "t.jsonl", pin, prompt="go"):
        pass
    assert (
        main(["task", "repin", "t", "--store", str(folder), "--role", "executor=claude-sonnet-4-5"])
        == 0
    )
    capsys.readouterr()
    script = Script().messages(reply("from the new model"))
    caplog.set_level(logging.WARNING, logger="nisse_llm")
    store = FileTaskStore(folder / "t.jsonl")
    with (
        RoleRouter.from_pin(pin, store=store, transport=ScriptedTransport(script)) as llm,
        Task.open(store, pin, router=llm) as task,
    ):
        assert task.pin.model_for("executor") == "claude-sonnet-4-5"
        assert task.pin.route("executor") == "anthropic_messages"
        assert task.pin_changes == ("roles.executor",)
        task.step("executor")
    assert [(r.route, r.model) for r in script.requests] == [
        ("anthropic_messages", "claude-sonnet-4-5")
    ]
    assert len(_warnings(caplog)) == 1
    record = store.read().repins[0]
    assert record.repin.changed == ["roles.executor"]
    assert "@" in record.repin.by


def test_an_async_task_reopened_after_an_edit_runs_on_its_own_pin(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`AsyncTask.open` keeps the task's own pin as `Task.open` does: its calls go to the
    model it began with, one WARNING, `pin_changes` naming the keys; ``strict_pin``
    refuses."""
    path = tmp_path / "task.jsonl"
    script = Script().chat(reply("first"), reply("second"))

    async def run() -> None:
        first = make_pin()
        transport = ScriptedTransport(script)
        async with (
            AsyncRoleRouter.from_pin(
                first, store=AsyncFileTaskStore(path), transport=transport
            ) as llm,
            AsyncTask.open(llm.store, first, router=llm, prompt="go") as task,
        ):
            await task.step("executor")
        later = _later_pin()
        with pytest.raises(TaskPinMismatch):
            await AsyncTask.open(path, later, strict_pin=True)
        async with (
            AsyncRoleRouter.from_pin(
                later, store=AsyncFileTaskStore(path), transport=transport
            ) as llm,
            AsyncTask.open(llm.store, later, router=llm) as task,
        ):
            assert task.pin == first
            assert task.pin_changes == ("mcp_servers", "roles.executor")
            await task.step("executor")  # replayed from the file
            await task.say("and then?")
            await task.step("executor")

    caplog.set_level(logging.WARNING, logger="nisse_llm")
    asyncio.run(run())
    assert [r.model for r in script.requests] == ["gpt-4.1-mini", "gpt-4.1-mini"]
    (warning,) = _warnings(caplog)
    assert "differs in mcp_servers, roles.executor" in warning
