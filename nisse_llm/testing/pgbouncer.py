"""A real PgBouncer in transaction mode in front of a `LocalPostgres`: never a mock.

`LocalPgBouncer` writes a configuration in a temporary directory and starts the machine's
``pgbouncer`` (Debian's package: ``make setup`` installs it where it is missing) on a free
loopback port. Every database of the server is reachable under its own name, with the
server's user and password (SCRAM, checked by PgBouncer against its own user list, then
used again towards the server). ``pool_mode = transaction``: a server connection belongs
to a client for one transaction only, so many clients share at most
``max_server_connections`` of them, and no session state (a plain ``SET``, a session
advisory lock, a prepared statement) is kept from one transaction to the next.

Two startup parameters a client may send are ignored rather than refused:
``extra_float_digits`` and ``options`` (libpq's ``-c name=value`` server settings, which
PgBouncer 1.18 cannot apply per client). A setting a client needs on every server
connection belongs to the role (``ALTER ROLE ... SET``) or the server. psycopg's automatic
prepared statements do not survive a change of server connection: a client of this pool
connects with ``prepare_threshold=None``.

PgBouncer refuses to run as root: as root it runs as ``nobody`` (``setpriv``), like the
server it fronts.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from nisse_llm._closing import Closing
from nisse_llm.testing.postgres import LocalPostgres

__all__ = ["LocalPgBouncer", "pgbouncer_bin"]

_RUN_AS = "nobody"
_START_S = 30.0


def pgbouncer_bin() -> Path | None:
    """The ``pgbouncer`` program (``PATH``, then Debian's ``/usr/sbin``), or None."""
    found = shutil.which("pgbouncer")
    if found is not None:
        return Path(found)
    for candidate in (Path("/usr/sbin/pgbouncer"), Path("/usr/local/sbin/pgbouncer")):
        if candidate.exists():
            return candidate
    return None


class LocalPgBouncer(Closing):
    """PgBouncer (``pool_mode = transaction``) in front of ``server``, started on
    construction on a free loopback port; `close` stops it and removes its directory.

    ``url`` is the server's URL with the host and port of the pool; `database` gives any
    other database's. At most ``max_server_connections`` server connections are open to a
    database at once (``default_pool_size`` and ``max_db_connections``); a client beyond
    them waits for one (``query_wait_timeout``) rather than failing.
    """

    def __init__(
        self,
        server: LocalPostgres,
        *,
        max_server_connections: int = 10,
        max_client_connections: int = 2000,
        query_wait_timeout_s: int = 60,
    ) -> None:
        program = pgbouncer_bin()
        if program is None:
            raise FileNotFoundError(
                "no pgbouncer program: install the machine's pgbouncer package "
                "(`apt-get install pgbouncer`; `make setup` does where it is missing)"
            )
        self.program = program
        self.server = server
        self.max_server_connections = max_server_connections
        self.dir = Path(tempfile.mkdtemp(prefix="nisse-pgbouncer-"))
        self.config = self.dir / "pgbouncer.ini"
        self.log = self.dir / "pgbouncer.log"
        self._pidfile = self.dir / "pgbouncer.pid"
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        try:
            self._configure(max_client_connections, query_wait_timeout_s)
            self.start()
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        """The server's ``postgresql://`` URL (user, password, database), through the pool."""
        return self.through(self.server.url)

    def database(self, name: str) -> str:
        """A new empty database ``name`` on the server, and its URL through the pool."""
        return self.through(self.server.database(name))

    def through(self, url: str) -> str:
        """``url`` (a database of the server) with the pool's host and port instead."""
        direct = f"@127.0.0.1:{self.server.port}/"
        if direct not in url:
            raise ValueError(f"not a URL of this pool's server: {url}")
        return url.replace(direct, f"@127.0.0.1:{self.port}/")

    def start(self) -> None:
        """Start PgBouncer (again) and wait until it accepts connections."""
        if self._process is not None and self._process.poll() is None:
            return
        command = [str(self.program), str(self.config)]
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_RUN_AS)
            command = [
                "setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                "--clear-groups", *command,
            ]  # fmt: skip
        self._process = subprocess.Popen(
            command, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"pgbouncer exited ({self._process.returncode}):\n{self._log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"pgbouncer did not listen within {_START_S} s:\n{self._log_tail()}")

    def stop(self) -> None:
        """Stop PgBouncer at once (its clients' connections close)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # PgBouncer's immediate shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        """Stop PgBouncer and remove its directory (the server keeps running)."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _configure(self, max_clients: int, query_wait_timeout_s: int) -> None:
        user = self.server.url.split("://", 1)[1].split(":", 1)[0]
        users = self.dir / "userlist.txt"
        users.write_text(f'"{user}" "{self.server.password}"\n')
        size = self.max_server_connections
        self.config.write_text(
            "\n".join(
                [
                    "[databases]",
                    f"* = host=127.0.0.1 port={self.server.port}",
                    "",
                    "[pgbouncer]",
                    "listen_addr = 127.0.0.1",
                    f"listen_port = {self.port}",
                    "unix_socket_dir =",
                    "auth_type = scram-sha-256",
                    f"auth_file = {users}",
                    f"admin_users = {user}",
                    "pool_mode = transaction",
                    f"default_pool_size = {size}",
                    "min_pool_size = 0",
                    "reserve_pool_size = 0",
                    f"max_db_connections = {size}",
                    f"max_client_conn = {max_clients}",
                    f"query_wait_timeout = {query_wait_timeout_s}",
                    "server_login_retry = 1",
                    "ignore_startup_parameters = extra_float_digits,options",
                    f"logfile = {self.log}",
                    f"pidfile = {self._pidfile}",
                    "",
                ]
            )
        )
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_RUN_AS)
            for path in (self.dir, users, self.config):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            users.chmod(0o600)

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
