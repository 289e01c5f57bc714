"""Start a throw-away PostgreSQL cluster from the installed binaries, on 127.0.0.1 and a free port."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Cluster:
    """A running throw-away cluster: its URL, and the means to stop and restart it (fault tests)."""

    url: str
    stop: Callable[[], None]
    start: Callable[[], None]


@dataclass
class PostgresServer:
    bindir: Path

    @classmethod
    def find(cls) -> PostgresServer | None:
        candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
        if initdb := shutil.which("initdb"):
            candidates.insert(0, str(Path(initdb).resolve().parent))
        for folder in candidates:
            if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
                return cls(Path(folder))
        return None

    @contextlib.contextmanager
    def running(self, *, durable: bool = False) -> Iterator[str]:
        """A cluster's URL; ``durable``: with fsync on, as PostgreSQL runs by default (benchmarks), not off."""
        with self.controlled(durable=durable) as cluster:
            yield cluster.url

    @contextlib.contextmanager
    def controlled(self, password: str | None = None, *, durable: bool = False) -> Iterator[Cluster]:
        """A cluster that trusts every connection, or with ``password`` one whose TCP connections need it (SCRAM):
        its URL then carries the password, and a wrong one is refused."""
        # Not under pytest's tmp dirs: those are private to root, and the server runs as `postgres`.
        workdir = Path(tempfile.mkdtemp(prefix="toolpath-pg-"))
        try:
            with self._cluster(workdir, password, durable) as cluster:
                yield cluster
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @contextlib.contextmanager
    def _cluster(self, workdir: Path, password: str | None, durable: bool) -> Iterator[Cluster]:
        data, sockets = workdir / "data", workdir / "sock"
        sockets.mkdir(parents=True, exist_ok=True)
        auth = ["-A", "trust"]
        if password is not None:  # local socket connections (createdb below) stay trusted
            (workdir / "pw").write_text(password)
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={workdir / 'pw'}"]
        user = None
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            user = "postgres"
            uid, gid = pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid
            for path in (workdir, sockets, *workdir.glob("pw")):
                os.chown(path, uid, gid)
        port = _free_port()
        self._run(user, "initdb", "-D", str(data), *auth, "-U", "postgres", "-E", "UTF8", "--no-sync")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets}" + ("" if durable else " -c fsync=off")
        running = {"up": False}

        def start() -> None:
            self._run(user, "pg_ctl", "-D", str(data), "-o", options, "-l", str(workdir / "log"), "-w", "start")
            running["up"] = True

        def stop() -> None:
            self._run(user, "pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
            running["up"] = False

        start()
        try:
            self._run(user, "createdb", "-h", str(sockets), "-p", str(port), "-U", "postgres", "toolpath_test")
            login = "postgres" if password is None else f"postgres:{password}"
            yield Cluster(f"postgresql+psycopg://{login}@127.0.0.1:{port}/toolpath_test", stop, start)
        finally:
            if running["up"]:
                stop()

    def _run(self, user: str | None, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if user is not None:
            command = ["runuser", "-u", user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/tmp")
        if result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stderr or result.stdout}")


def postgres_server() -> PostgresServer:
    """The installed PostgreSQL binaries; the test fails under CI (which installs them) and skips elsewhere."""
    server = PostgresServer.find()
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; .ci/run must install it (apt-get install -y postgresql)")
        pytest.skip("PostgreSQL binaries not found (apt-get install -y postgresql)")
    return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
