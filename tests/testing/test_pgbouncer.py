"""`LocalPgBouncer`: a real PgBouncer in transaction mode in front of the session's
PostgreSQL. A query goes through; twenty clients share the configured few server
connections; and no session state is kept for a client from one transaction to the next
(it stays with the server connection, which the next client gets)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from itertools import count

import psycopg
import pytest

from nisse_llm.testing.pgbouncer import LocalPgBouncer
from nisse_llm.testing.postgres import LocalPostgres

_names = count()


def _connect(url: str) -> psycopg.Connection[tuple[object, ...]]:
    # No automatic prepared statements: they live on a server connection, not a client.
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


@pytest.fixture
def one_connection(postgres: LocalPostgres) -> Iterator[LocalPgBouncer]:
    """A pool of its own with a single server connection, so which one a client gets is
    certain."""
    with LocalPgBouncer(postgres, max_server_connections=1) as pool:
        yield pool


def test_a_query_goes_through_to_the_server(pgbouncer: LocalPgBouncer) -> None:
    url = pgbouncer.database(f"through_{next(_names)}")
    assert f":{pgbouncer.port}/" in url
    assert pgbouncer.port != pgbouncer.server.port
    with _connect(url) as conn:
        conn.execute("CREATE TABLE t (n int)")
        conn.execute("INSERT INTO t VALUES (1), (2)")
        row = conn.execute("SELECT current_database(), sum(n) FROM t").fetchone()
    assert row == (url.rsplit("/", 1)[1], 3)
    with psycopg.connect(pgbouncer.server.url.rsplit("/", 1)[0] + "/" + str(row[0])) as direct:
        assert direct.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_a_wrong_password_is_refused(pgbouncer: LocalPgBouncer) -> None:
    wrong = pgbouncer.url.replace(pgbouncer.server.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="authentication failed"):
        _connect(wrong).close()


def test_twenty_clients_share_the_configured_server_connections(postgres: LocalPostgres) -> None:
    """Twenty clients, each 25 short transactions that sleep a little inside: between them
    they meet at most four server sessions (their backend pids), and the server never
    counts more than four sessions on the database (pg_stat_activity, sampled directly
    throughout)."""
    name = f"multiplexed_{next(_names)}"
    with LocalPgBouncer(postgres, max_server_connections=4) as pool:
        url = pool.database(name)
        pids: set[int] = set()
        errors: list[BaseException] = []
        done = threading.Event()
        peak = 0

        def client() -> None:
            try:
                with _connect(url) as conn:
                    for _ in range(25):
                        with conn.transaction():
                            conn.execute("SELECT pg_sleep(0.01)")
                            row = conn.execute("SELECT pg_backend_pid()").fetchone()
                            assert row is not None
                            pids.add(int(row[0]))
            except BaseException as exc:  # reported below
                errors.append(exc)

        def sample() -> None:
            nonlocal peak
            with psycopg.connect(postgres.url, autocommit=True) as conn:
                while not done.is_set():
                    row = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
                    ).fetchone()
                    assert row is not None
                    peak = max(peak, int(row[0]))
                    done.wait(0.005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        clients = [threading.Thread(target=client) for _ in range(20)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        done.set()
        sampler.join()
    assert not errors, errors
    assert 1 <= len(pids) <= 4
    assert 1 <= peak <= 4


def test_a_plain_set_is_not_kept_for_the_client(
    one_connection: LocalPgBouncer,
) -> None:
    """A ``SET`` without ``LOCAL`` outlives the client's transaction on the server
    connection, so another client's next transaction sees it: session state belongs to
    no client in transaction mode."""
    url = one_connection.database(f"set_{next(_names)}")
    with _connect(url) as first, _connect(url) as second:
        first.execute("SET application_name = 'set-by-first'")
        row = second.execute("SHOW application_name").fetchone()
        first_pid = first.execute("SELECT pg_backend_pid()").fetchone()
        second_pid = second.execute("SELECT pg_backend_pid()").fetchone()
        second.execute("RESET ALL")
    assert row == ("set-by-first",)
    assert first_pid == second_pid


def test_a_session_advisory_lock_is_not_the_clients(one_connection: LocalPgBouncer) -> None:
    """A session advisory lock taken by one client stays with the server connection: a
    second client gets it too (the lock is re-entrant in one session), so a lease held as
    a session lock means nothing through this pool."""
    url = one_connection.database(f"advisory_{next(_names)}")
    with _connect(url) as first, _connect(url) as second:
        assert first.execute("SELECT pg_try_advisory_lock(42)").fetchone() == (True,)
        assert second.execute("SELECT pg_try_advisory_lock(42)").fetchone() == (True,)
        second.execute("SELECT pg_advisory_unlock_all()")
