"""A server process the testing kit starts and always stops: the proxy and Redis share it.

`ServerProcess` holds the process, its work folder and port; `stop` ends it by its PID
(SIGTERM, then SIGKILL after a grace) and removes the folder, also when the object is
collected or the interpreter exits; `start_retrying` starts it, stopping it on any failure.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar, Self

from nisse_llm._closing import Closing

__all__ = ["ServerProcess", "Started", "serve_until_interrupted", "start_retrying", "terminate"]


def terminate(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """End ``process``: SIGTERM, then SIGKILL when it has not exited after ``grace_s``."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


def start_retrying(
    launch: Callable[[], object],
    wait_ready: Callable[[], object],
    stop: Callable[[], object],
    error: type[Exception],
) -> None:
    """Launch a server and wait until it is ready, stopping it on any failure. A port
    taken by another process between choosing and binding it (``error`` saying "address
    already in use") is retried, three attempts in all; Ctrl-C or SIGTERM while starting
    stops it too, since the caller's ``with`` never took it."""
    for attempt in (1, 2, 3):
        try:
            launch()
            wait_ready()
            return
        except error as exc:
            stop()
            if "address already in use" not in str(exc).lower() or attempt == 3:
                raise
        except BaseException:
            stop()
            raise


class Started(Closing):
    """A server ``with`` starts and stops: ``__enter__`` is `start`; leaving (or `close`)
    is `stop`."""

    def start(self) -> Self:
        """Start the server and wait until it is ready (a subclass's job)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the server (a subclass's job)."""
        raise NotImplementedError

    def close(self) -> None:
        """`stop`: what leaving the ``with`` does."""
        self.stop()

    def __enter__(self) -> Self:
        return self.start()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve_until_interrupted(
    start: Callable[[contextlib.ExitStack], Iterable[str]], error: type[Exception]
) -> int:
    """Start servers on a stack (``start`` enters them and returns lines to print), then
    wait for Ctrl-C or SIGTERM; either unwinds the stack, so every process is stopped.
    0 when interrupted, 1 (the message on stderr) when starting raised ``error``."""
    # SIGTERM unwinds like Ctrl-C.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with contextlib.ExitStack() as stack:
            for line in start(stack):
                print(line)
            print("Ctrl-C stops it.", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


class ServerProcess(Started):
    """What a started server holds, and how it is stopped; subclasses launch it."""

    #: Seconds between SIGTERM and SIGKILL when stopping.
    STOP_GRACE_S: ClassVar[float] = 10.0

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        """Keep ``process``, ended also when this object is collected or at exit."""
        self._process = process
        self._finalizer = weakref.finalize(self, terminate, process, self.STOP_GRACE_S)

    def stop(self) -> None:
        """Stop the server by its PID (SIGTERM, then SIGKILL after a grace) and clean up."""
        process, self._process = self._process, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if process is not None:
            terminate(process, self.STOP_GRACE_S)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        self._port = None
