"""What the sync stores do where unasync cannot spell it from the async side (see
``_async/io.py``, its twin by name): blocking work done in place, the store's lock, and
``next_seq`` as a property, a heartbeat (a thread) and where the process's shared things
are kept."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Heartbeat", "NextSeq", "blocking", "new_lock", "shared", "soon"]

logger = logging.getLogger("nisse_llm")
_SHARED: dict[Any, Any] = {}

T = TypeVar("T")


def blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)``, here and now."""
    return fn(*args)


def new_lock() -> threading.Lock:
    """The store's lock: one read-then-write of this object at a time, across threads."""
    return threading.Lock()


class NextSeq:
    """``store.next_seq``: a property on the sync side, a coroutine on the async."""

    __slots__ = ()

    def _next_seq(self) -> int:
        raise NotImplementedError

    @property
    def next_seq(self) -> int:
        """The sequence number the next `append_event` will use (0 for an empty log)."""
        return self._next_seq()


def soon(fn: Callable[..., object], /, *args: Any) -> None:
    """Start ``fn(*args)`` in a daemon thread and return at once; its failure is logged."""

    def run() -> None:
        try:
            fn(*args)
        except Exception:
            logger.debug("a background release failed", exc_info=True)

    threading.Thread(target=run, name="nisse-release", daemon=True).start()


def shared() -> dict[Any, Any]:
    """What this process's stores share (their connection pools)."""
    return _SHARED


class Heartbeat:
    """``beat()`` every ``every_s`` seconds, in a daemon thread, from `start` until `stop`
    (or `cancel`, the same here); a beat that raises is logged and the next one comes on
    time."""

    def __init__(self, beat: Callable[[], object], every_s: float) -> None:
        self._beat = beat
        self._every_s = every_s
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nisse-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._every_s):
            try:
                self._beat()
            except Exception:
                logger.warning(
                    "a lease heartbeat failed; the next one comes on time", exc_info=True
                )

    def cancel(self) -> None:
        self._stopped.set()

    def stop(self) -> None:
        self._stopped.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
