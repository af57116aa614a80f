"""The task file's former home, kept for imports written against it for one release: each
name warns and names its new home, `nisse_llm.task.logstore` (and the store's names before
it had siblings, ``LogStore`` and ``AsyncLogStore``, their new names)."""

from __future__ import annotations

from nisse_llm import _lazy
from nisse_llm.task import logstore as _home

# Name -> its new home.
_HOMES = {
    **dict.fromkeys(_home.__all__, _home.__name__),
    "LogStore": f"{_home.__name__}:FileTaskStore",
    "AsyncLogStore": f"{_home.__name__}:AsyncFileTaskStore",
}

__all__ = sorted(_home.__all__)

__getattr__ = _lazy.former_home(__name__, _HOMES)
