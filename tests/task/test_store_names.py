"""The task stores' names: siblings under one abstract store, and the old names still
working for one release, with a warning."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import nisse_llm
from nisse_llm.task.logstore import AsyncFileTaskStore, AsyncTaskStore, FileTaskStore, TaskStore
from nisse_llm.task.postgres import AsyncPostgresTaskStore, PostgresTaskStore

OLD_NAMES = [
    ("nisse_llm", "LogStore", FileTaskStore),
    ("nisse_llm", "AsyncLogStore", AsyncFileTaskStore),
    ("nisse_llm", "PostgresLogStore", PostgresTaskStore),
    ("nisse_llm", "AsyncPostgresLogStore", AsyncPostgresTaskStore),
    ("nisse_llm.task.logstore", "LogStore", FileTaskStore),
    ("nisse_llm.task.logstore", "AsyncLogStore", AsyncFileTaskStore),
    ("nisse_llm.logstore", "LogStore", FileTaskStore),
    ("nisse_llm.task.postgres", "PostgresLogStore", PostgresTaskStore),
    ("nisse_llm.task.postgres", "AsyncPostgresLogStore", AsyncPostgresTaskStore),
]


@pytest.mark.parametrize(("module", "old", "new"), OLD_NAMES)
def test_an_old_store_name_gives_its_new_class_with_a_deprecation_warning(
    module: str, old: str, new: type
) -> None:
    """Each old name is the renamed class, and each use of it warns, naming the new name."""
    for _ in range(2):  # warned at every use, not only the first
        with pytest.warns(DeprecationWarning, match=new.__name__):
            assert getattr(importlib.import_module(module), old) is new


def test_the_file_and_database_stores_are_siblings() -> None:
    """Neither concrete store subclasses the other; both are the abstract store's."""
    assert issubclass(FileTaskStore, TaskStore)
    assert issubclass(PostgresTaskStore, TaskStore)
    assert not issubclass(PostgresTaskStore, FileTaskStore)
    assert not issubclass(AsyncPostgresTaskStore, AsyncFileTaskStore)
    assert issubclass(AsyncPostgresTaskStore, AsyncTaskStore)
    with pytest.raises(TypeError, match="abstract"):
        TaskStore()  # type: ignore[abstract]


def test_the_new_names_are_public_and_the_old_ones_are_not_listed() -> None:
    """``nisse_llm`` lists the new names; the old ones are reachable but not in ``__all__``."""
    new = {"TaskStore", "FileTaskStore", "PostgresTaskStore"}
    new |= {"Async" + name for name in new}
    assert new <= set(nisse_llm.__all__)
    assert not {"LogStore", "AsyncLogStore", "PostgresLogStore"} & set(nisse_llm.__all__)


def test_two_store_objects_of_one_file_hold_the_same_task(tmp_path: Path) -> None:
    """`same_task` compares where the task is kept (a symlink resolved), not the objects."""
    path = tmp_path / "task.jsonl"
    (tmp_path / "link.jsonl").symlink_to(path)
    assert FileTaskStore(path).same_task(FileTaskStore(tmp_path / "link.jsonl"))
    assert not FileTaskStore(path).same_task(FileTaskStore(tmp_path / "other.jsonl"))
    url = "postgresql://u@localhost/db"
    assert PostgresTaskStore(url, "k").same_task(PostgresTaskStore(url, "k"))
    assert not PostgresTaskStore(url, "k").same_task(PostgresTaskStore(url, "j"))
    assert not FileTaskStore(path).same_task(PostgresTaskStore(url, "k"))
