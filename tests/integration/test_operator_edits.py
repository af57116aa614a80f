"""Operators change things while tasks run, through the real proxy: ten tasks (five task
files, five in PostgreSQL) are killed mid-run; the operator remaps ``roles.executor``, adds
an MCP server and repins one task with ``task repin``; each task reopened the README's way
with the new settings finishes on the model and servers it began with (the repinned one on
its new model), with one WARNING naming what differs; a new task takes the new map. What
reaches the upstream is the proof. A task file pinned to another proxy is refused with no
request sent anywhere, until ``task repin --base-url`` moves it to this proxy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from nisse_llm import Task, TaskPinMismatch, load_settings
from nisse_llm.task.dsn import password_of
from nisse_llm.testing import RecordedRequest, Script, ScriptedServer, ToolUse, reply
from nisse_llm.testing.postgres import LocalPostgres
from nisse_llm.testing.proxy import LiteLLMProxy
from tests.config.helpers import toml_dumps
from tests.integration._operator_agent import prompt_of
from tests.mcp.helpers import REPO

pytestmark = pytest.mark.proxy

ROOT = Path(__file__).resolve().parents[2]
BEFORE = {
    "planner": "claude-scripted",
    "executor": "gpt-scripted",
    "delegate": "claude-alt",
    "consultant": "gpt-alt",
}
AFTER = {**BEFORE, "executor": "gpt-alt"}
TEST_SERVER = {
    "command": sys.executable,
    "args": ["-m", "tests.mcp.server", "stdio"],
    "cwd": str(REPO),
}
FILES = [f"f{n}" for n in range(5)]
ROWS = [f"p{n}" for n in range(5)]
REPINNED = "p4"


def _write(path: Path, roles: dict[str, str], *, mcp: bool) -> None:
    document: dict[str, Any] = {"roles": roles}
    if mcp:
        document["mcp"] = {"servers": {"test": TEST_SERVER}}
    path.write_text(toml_dumps(document))


def _env(proxy: LiteLLMProxy, config: Path, store: str, password: str) -> dict[str, str]:
    """What a worker's environment holds: the proxy, the config file, the store (a URL
    without its password: PGPASSWORD holds it)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NISSE_", "PG"))}
    return {
        **base,
        "NISSE_CONFIG": str(config),
        "NISSE_LLM_BASE_URL": proxy.base_url,
        "NISSE_LLM_TOKEN": proxy.token,
        "NISSE_TASK_STORE": store,
        "PGPASSWORD": password,
    }


#: Every agent process a test started, killed and its pipes closed when the test ends,
#: so that one failing test leaves no process or open pipe to the tests after it.
_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _reap_agents() -> Iterator[None]:
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)


def _agent(key: str, mode: str, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration._operator_agent", key, mode],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _STARTED.append(process)
    return process


def _for(script: Script, key: str) -> list[RecordedRequest]:
    """The requests of task ``key`` that reached the upstream, in order."""
    return [r for r in script.requests if r.user_texts[:1] == [prompt_of(key)]]


def _tool_names(request: RecordedRequest) -> list[str]:
    tools = request.json.get("tools", [])
    return [tool.get("name") or tool["function"]["name"] for tool in tools]


#: A killed agent's PostgreSQL lease runs out within the default lease, 15 s, after its
#: last renewal; the slack is a loaded machine's.
LEASE_FREED_S = 15.0 + 10.0


def _leases_run_out(url: str) -> None:
    """Wait until no task of the database at ``url`` is leased (its holders were killed)."""
    deadline = time.monotonic() + LEASE_FREED_S
    with psycopg.connect(url, autocommit=True) as conn:
        while conn.execute(
            "SELECT count(*) FROM nisse.nisse_tasks WHERE lease_expires > now()"
        ).fetchone() != (0,):
            assert time.monotonic() < deadline, "a killed agent's lease outlived its bound"
            time.sleep(0.1)


def test_running_tasks_keep_their_pin_through_an_operators_edits(
    proxy: LiteLLMProxy, script: Script, postgres: LocalPostgres, tmp_path: Path
) -> None:
    """Every reopened task finishes on its pinned executor and servers with one WARNING
    naming ``mcp_servers, roles.executor``; the repinned one on its new model (its record
    saying when and by whom); a new task on the new map with the new server."""
    folder = tmp_path / "tasks"
    url = postgres.database(f"fleet_{tmp_path.name}".lower())
    bare = url.replace(f":{password_of(url)}@", "@")
    config = tmp_path / "nisse.toml"
    _write(config, BEFORE, mcp=False)
    stores = {key: str(folder) for key in FILES} | dict.fromkeys(ROWS, bare)
    envs = {key: _env(proxy, config, where, postgres.password) for key, where in stores.items()}
    for key in [*FILES, *ROWS, "n1"]:
        script.when(
            reply(ToolUse("wait_here", {"step": 1})),
            user_text=prompt_of(key),
            where=lambda r: not r.tool_results,
        )
        script.when(reply(f"done {key}"), user_text=prompt_of(key), tool_result="step 1")

    running = {key: _agent(key, "hang", env) for key, env in envs.items()}
    for process in running.values():
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n", (
            process.stderr.read() if process.stderr else ""
        )
    for process in running.values():
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    _leases_run_out(url)

    _write(config, AFTER, mcp=True)
    repin = subprocess.run(
        [
            sys.executable,
            "-m",
            "nisse_llm",
            "task",
            "repin",
            REPINNED,
            "--role",
            "executor=claude-alt",
            "--by",
            "ops-oncall",
        ],
        cwd=ROOT,
        env={
            k: v
            for k, v in envs[REPINNED].items()
            if k not in ("NISSE_LLM_TOKEN", "NISSE_CONFIG", "NISSE_LLM_BASE_URL")
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert repin.returncode == 0, repin.stderr

    reopened = {key: _agent(key, "finish", env) for key, env in envs.items()}
    reports = {}
    for key, process in reopened.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        warnings = [line for line in err.splitlines() if line.startswith("WARNING ")]
        assert len(warnings) == 1, err
        assert "differs in mcp_servers, roles.executor" in warnings[0]
        reports[key] = json.loads(out)
    for key, report in reports.items():
        pinned = "claude-alt" if key == REPINNED else "gpt-scripted"
        assert report == {
            "text": f"done {key}",
            "executor": pinned,
            "changes": ["mcp_servers", "roles.executor"],
            "servers": [],
            "tools": ["wait_here"],
        }
        sent = _for(script, key)
        assert [r.model for r in sent] == ["gpt-scripted", pinned]
        assert [_tool_names(r) for r in sent] == [["wait_here"], ["wait_here"]]
    assert _for(script, REPINNED)[1].route == "anthropic_messages"

    new = _agent("n1", "finish", envs["f0"])
    out, err = new.communicate(timeout=120)
    assert new.returncode == 0, err
    assert not [line for line in err.splitlines() if line.startswith("WARNING ")]
    report = json.loads(out)
    assert (report["executor"], report["changes"], report["servers"]) == ("gpt-alt", [], ["test"])
    (first, second) = _for(script, "n1")
    assert (first.model, second.model) == ("gpt-alt", "gpt-alt")
    assert {"wait_here", "echo"} <= set(_tool_names(first))

    shown = subprocess.run(
        [sys.executable, "-m", "nisse_llm", "task", "show", REPINNED],
        cwd=ROOT,
        env=envs[REPINNED],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "repins: 1" in shown.stdout
    assert "by ops-oncall: roles.executor gpt-scripted -> claude-alt" in shown.stdout
    assert postgres.password not in shown.stdout + shown.stderr + repin.stdout + repin.stderr


def test_a_task_pinned_to_another_proxy_sends_nothing_until_repinned(
    proxy: LiteLLMProxy, script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task file whose pin names another proxy (here a server that records whatever it
    gets) is refused on opening, strict or not, and nothing reaches either; after
    ``task repin KEY --base-url`` it opens and its call goes through this proxy."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    key = "from-elsewhere"
    script.when(reply("done here"), user_text=prompt_of(key))
    with ScriptedServer() as elsewhere:
        foreign = load_settings(
            None, llm={"base_url": elsewhere.base_url, "token": "sk-other"}, roles=BEFORE
        ).pin()
        with Task.open(folder / f"{key}.jsonl", foreign, prompt=prompt_of(key)):
            pass
        settings = load_settings(
            None,
            llm={"base_url": proxy.base_url, "token": proxy.token},
            roles=BEFORE,
            task_store=str(folder),
        )
        for strict in (False, True):
            with pytest.raises(TaskPinMismatch) as caught:
                Task.open(key, settings.pin(), settings=settings, strict_pin=strict)
            assert elsewhere.base_url.rstrip("/") in str(caught.value)
            assert proxy.base_url.rstrip("/") in str(caught.value)
        assert elsewhere.script.requests == []
        assert _for(script, key) == []

        monkeypatch.delenv("NISSE_LLM_TOKEN", raising=False)
        moved = subprocess.run(
            [
                sys.executable,
                "-m",
                "nisse_llm",
                "task",
                "repin",
                key,
                "--store",
                str(folder),
                "--base-url",
                proxy.base_url,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert moved.returncode == 0, moved.stderr
        with Task.open(key, settings.pin(), settings=settings) as task:
            assert task.run("executor", tools=None).text == "done here"
        assert elsewhere.script.requests == []
    assert [r.model for r in _for(script, key)] == ["gpt-scripted"]
