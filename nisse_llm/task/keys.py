"""A task key: one name that is a file name on every system and a database row alike."""

from __future__ import annotations

import re

from nisse_llm.errors import ConfigError

__all__ = ["TASK_KEY_PATTERN", "check_task_key"]

#: A task key: a file name on every system, and the same key in a database.
TASK_KEY_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}"


def check_task_key(key: str) -> str:
    """``key`` if it is a task key, else `ConfigError` saying what a key may hold (every
    store refuses such a key at construction, so none can be written that the CLI refuses)."""
    if not isinstance(key, str) or re.fullmatch(TASK_KEY_PATTERN, key) is None:
        raise ConfigError(
            f"task key {key!r}: use letters, digits, '.', '_' and '-' (at most 200, the "
            "first a letter or a digit), so it names a file and a database row alike"
        )
    return key
