"""The ``task_store`` setting: its precedence, where a key's task lives, and its secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from nisse_llm.config.settings import load_settings
from nisse_llm.errors import ConfigError
from nisse_llm.task.logstore import TaskStore
from nisse_llm.task.postgres import PostgresTaskStore
from nisse_llm.task.stores import open_task_store
from tests.config.helpers import COMPLETE, write_config

URL = "postgresql://agent:pg-PASS-w0rd@db.internal:5432/tasks?sslmode=verify-full"


def _file(tmp_path: Path, **top: str) -> Path:
    document: dict[str, object] = {**top, **{t: dict(v) for t, v in COMPLETE.items()}}
    return write_config(tmp_path / "nisse-llm.toml", document)  # type: ignore[arg-type]


def test_argument_beats_environment_beats_file_beats_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``task_store=`` over NISSE_TASK_STORE over the file's top-level key over none, each
    source named."""
    path = _file(tmp_path, task_store="from-file")
    monkeypatch.setenv("NISSE_TASK_STORE", "from-env")
    loaded = load_settings(path, task_store="from-arg")
    assert loaded.task_store is not None
    assert loaded.task_store.get_secret_value() == "from-arg"
    assert loaded.sources["task_store"] == "argument task_store="
    loaded = load_settings(path)
    assert loaded.task_store is not None
    assert loaded.task_store.get_secret_value() == "from-env"
    assert loaded.sources["task_store"] == "env NISSE_TASK_STORE"
    monkeypatch.delenv("NISSE_TASK_STORE")
    loaded = load_settings(path)
    assert loaded.task_store is not None
    assert loaded.task_store.get_secret_value() == "from-file"
    assert loaded.sources["task_store"].startswith(f"file {path}")
    default = load_settings(_file(tmp_path))  # the same file, without the key
    assert default.task_store is None
    assert default.sources["task_store"] == "default"


def test_a_key_opens_a_file_beside_the_config_or_a_database_task(tmp_path: Path) -> None:
    """No setting: ``tasks/KEY.jsonl`` beside the config file; a relative folder is taken
    from there too; a postgresql:// URL opens that database's task (nothing connects
    until used); a key that is not a plain name is refused."""
    beside = open_task_store("fix-issue-123", load_settings(_file(tmp_path)))
    assert isinstance(beside, TaskStore)
    assert beside.path == tmp_path / "tasks" / "fix-issue-123.jsonl"
    folder = open_task_store("k", load_settings(_file(tmp_path), task_store="state/t"))
    assert folder.path == tmp_path / "state" / "t" / "k.jsonl"
    database = open_task_store("k", load_settings(_file(tmp_path), task_store=URL))
    assert isinstance(database, PostgresTaskStore)
    assert database.key == "k"
    assert database.url == URL.replace("pg-PASS-w0rd", "(set)")
    assert "pg-PASS-w0rd" not in repr(database)
    for bad in ("../escape", ".hidden", "a/b", "", "x" * 201):
        with pytest.raises(ConfigError, match="task key"):
            open_task_store(bad, load_settings(_file(tmp_path)))


def test_the_password_is_never_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``config show`` and ``config check`` say ``(set)`` for the URL's password, and the
    settings' repr hides the whole value."""
    from nisse_llm.cli.main import main

    path = _file(tmp_path, task_store=URL)
    assert "pg-PASS-w0rd" not in repr(load_settings(path))
    assert main(["config", "show", "--config", str(path)]) == 0
    assert main(["config", "check", "--config", str(path)]) == 0
    assert main(["config", "show", "--json", "--config", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "pg-PASS-w0rd" not in out + err
    assert f"task_store: {URL.replace('pg-PASS-w0rd', '(set)')}" in out
    with pytest.raises(ConfigError):
        load_settings(path, task_store=3)


def test_the_task_schema_comes_from_argument_environment_or_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``task_schema`` (default ``nisse``) comes from the argument, NISSE_TASK_SCHEMA or the
    file's top-level key, reaches a database store opened by key, and is refused when it
    is not a plain SQL name."""
    path = _file(tmp_path, task_schema="from_file", task_store=URL)
    monkeypatch.delenv("NISSE_TASK_SCHEMA", raising=False)
    plain = write_config(tmp_path / "plain.toml", {t: dict(v) for t, v in COMPLETE.items()})  # type: ignore[arg-type]
    assert load_settings(plain).task_schema == "nisse"
    assert load_settings(path).task_schema == "from_file"
    monkeypatch.setenv("NISSE_TASK_SCHEMA", "from_env")
    settings = load_settings(path)
    assert settings.task_schema == "from_env"
    assert settings.sources["task_schema"] == "env NISSE_TASK_SCHEMA"
    assert load_settings(path, task_schema="from_arg").task_schema == "from_arg"
    store = open_task_store("k", settings)
    assert isinstance(store, PostgresTaskStore)
    assert store.place[2] == "from_env"
    with pytest.raises(ConfigError, match="task_schema"):
        load_settings(path, task_schema="Not-A-Name")
