"""A throw-away PostgreSQL primary with a streaming replica on 127.0.0.1 (``pg_basebackup -R`` from the installed
binaries), the replica promoted on demand: a failover as tests run it.

The primary commits synchronously to the replica (``synchronous_standby_names = '*'``): a commit it acknowledged
is on the replica too, so a failover loses nothing acknowledged. After the promotion the new primary commits on
its own."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.pgserver import PostgresServer, _free_port

DATABASE = "toolpath_test"


@dataclass
class ReplicatedCluster:
    """A primary and its streaming replica, each on its own port."""

    server: PostgresServer
    workdir: Path
    user: str | None
    primary_port: int
    replica_port: int
    primary_up: bool = True
    replica_up: bool = True

    @property
    def primary_url(self) -> str:
        return url_at(self.primary_port)

    @property
    def replica_url(self) -> str:
        return url_at(self.replica_port)

    def stop_primary(self) -> None:
        """The primary dies at once (``pg_ctl stop -m immediate``: no checkpoint, clients cut off)."""
        self._ctl("primary", "-m", "immediate", "-w", "stop")
        self.primary_up = False

    def promote(self) -> None:
        """The replica leaves recovery and takes writes (``pg_ctl promote``, waiting until it does)."""
        self._ctl("replica", "-w", "promote")

    def wait_replayed(self, timeout: float = 30) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        import psycopg

        with psycopg.connect(_dsn(self.primary_port), autocommit=True) as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        deadline = time.monotonic() + timeout
        with psycopg.connect(_dsn(self.replica_port), autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
                if row is not None and row[0]:
                    return
                time.sleep(0.05)
        raise TimeoutError(f"the replica did not replay up to {target} in {timeout} s")

    def _ctl(self, node: str, *args: str) -> None:
        self.server._run(self.user, "pg_ctl", "-D", str(self.workdir / node), *args)

    def stop(self) -> None:
        for node, up in (("replica", self.replica_up), ("primary", self.primary_up)):
            if up:
                with contextlib.suppress(RuntimeError):
                    self._ctl(node, "-m", "immediate", "-w", "stop")
        self.primary_up = self.replica_up = False


def url_at(port: int) -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/{DATABASE}"


def _dsn(port: int) -> str:
    return f"host=127.0.0.1 port={port} user=postgres dbname={DATABASE}"


@contextlib.contextmanager
def replicated(server: PostgresServer, *, synchronous: bool = True) -> Iterator[ReplicatedCluster]:
    """A primary with database ``toolpath_test`` and a hot-standby replica streaming from it, both running;
    ``synchronous``: the primary's commits wait for the replica's flush. Both are stopped and removed after."""
    workdir = Path(tempfile.mkdtemp(prefix="toolpath-pgrepl-"))  # not under pytest's: the server runs as postgres
    user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        user = "postgres"
        entry = pwd.getpwnam(user)
        os.chown(workdir, entry.pw_uid, entry.pw_gid)
    primary, replica, sockets = workdir / "primary", workdir / "replica", workdir / "sock"
    cluster = ReplicatedCluster(server, workdir, user, _free_port(), _free_port(), False, False)
    try:
        sockets.mkdir()
        if user is not None:
            os.chown(sockets, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
        server._run(user, "initdb", "-D", str(primary), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        common = f"-c listen_addresses=127.0.0.1 -k {sockets} -c fsync=off -c max_connections=200"
        server._run(
            user, "pg_ctl", "-D", str(primary), "-l", str(workdir / "primary.log"), "-w", "start",
            "-o", f"{common} -p {cluster.primary_port}",
        )  # fmt: skip
        cluster.primary_up = True
        server._run(user, "createdb", "-h", str(sockets), "-p", str(cluster.primary_port), "-U", "postgres", DATABASE)
        server._run(
            user, "pg_basebackup", "-h", "127.0.0.1", "-p", str(cluster.primary_port), "-U", "postgres",
            "-D", str(replica), "-R", "-X", "stream", "--no-sync", "--checkpoint=fast",
        )  # fmt: skip
        server._run(
            user, "pg_ctl", "-D", str(replica), "-l", str(workdir / "replica.log"), "-w", "start",
            "-o", f"{common} -p {cluster.replica_port} -c hot_standby=on",
        )  # fmt: skip
        cluster.replica_up = True
        if synchronous:  # only now: until the replica streams, a synchronous commit would wait for it
            import psycopg

            with psycopg.connect(_dsn(cluster.primary_port), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
                conn.execute("SELECT pg_reload_conf()")
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
