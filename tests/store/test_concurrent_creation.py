"""Every path that creates a store takes the one lock migrations take (SQLite: the database folder's; PostgreSQL:
an advisory lock): eight processes that create one new store at once — opening it, ``toolpath.init()`` with a
traced run, ``toolpath db upgrade``, ``toolpath eval --store`` — all succeed, over and over, and leave one schema at
the newest revision. ``toolpath.init()`` used to migrate without the lock when the store opened slowly (a loaded
machine), racing whoever opened it next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from toolpath.store import migrate
from toolpath.store.store import Store
from toolpath.store.writelock import database_file_lock

OPENER = """
import json, os, sys, time
url, mode, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
if mode == "store":
    from toolpath.store.store import Store
    Store(url).close()
elif mode == "init":
    import toolpath
    toolpath.init(url)
    @toolpath.agent(name="racer")
    def racer(prompt):
        return prompt
    racer("hi", session_id=f"race-{os.getpid()}")
    assert toolpath.flush(30), toolpath.stats()
    toolpath.shutdown()
else:
    from toolpath.cli import main
    args = ["db", "upgrade", "--store", url] if mode == "db" else ["eval", "cases.jsonl", "--metrics",
            "trajectory_exact_match", "--store", url, "--quiet"]
    main(args)
"""
MODES = ["store", "init", "db", "eval", "store", "init", "db", "eval"]
ROUNDS = 3


def race(folder: Path, url: str) -> None:
    (folder / "opener.py").write_text(OPENER)
    row = {"prompt": "p", "predicted_trajectory": [], "reference_trajectory": []}
    (folder / "cases.jsonl").write_text(json.dumps(row) + "\n")
    start = time.time() + 3  # every interpreter started and importing when the clock strikes
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    processes = [
        subprocess.Popen([sys.executable, "opener.py", url, mode, str(start)], cwd=folder, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for mode in MODES
    ]  # fmt: skip
    failures = []
    for mode, process in zip(MODES, processes, strict=True):
        _, err = process.communicate(timeout=180)
        if process.returncode not in (0, None) or "Traceback" in err:
            failures.append(f"{mode}: exit {process.returncode}: {err[-2000:]}")
    assert failures == []
    store = Store(url, create=False)
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [migrate.HEAD]
        assert conn.execute(text("SELECT count(*) FROM invocations WHERE session_id LIKE 'race-%'")).scalar() == 2
    store.close()


def test_eight_processes_create_one_sqlite_store_at_once(tmp_path):
    for n in range(ROUNDS):
        folder = tmp_path / f"round{n}"
        folder.mkdir()
        race(folder, f"sqlite:///{folder / 'new.db'}")


def test_eight_processes_create_one_postgresql_store_at_once(tmp_path, postgres_url):
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        for n in range(ROUNDS):
            name = f"race_{uuid.uuid4().hex[:12]}"
            with admin.connect() as conn:
                conn.execute(text(f"CREATE DATABASE {name}"))
            folder = tmp_path / f"round{n}"
            folder.mkdir()
            try:
                race(folder, make_url(postgres_url).set(database=name).render_as_string(hide_password=False))
            finally:
                with admin.connect() as conn:
                    conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
    finally:
        admin.dispose()


def test_init_creates_a_store_only_under_the_lock(tmp_path):
    """While another process holds the lock, ``toolpath.init()`` leaves the new store alone (and the agent runs);
    once it is let go, the store is made and the run written."""
    import toolpath

    db = tmp_path / "held.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom toolpath.store.writelock import database_file_lock\n"
         f"with database_file_lock({str(db)!r}):\n    print('held', flush=True)\n    sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        tracing = toolpath.init(f"sqlite:///{db}")  # waits its 2 s, then goes on without the store

        @toolpath.agent(name="patient")
        def patient(prompt: str) -> str:
            return prompt

        assert patient("hello", session_id="held-1") == "hello"
        with Store(f"sqlite:///{db}", create=False).engine.connect() as conn:  # nothing made under the holder
            assert migrate.current_revision(conn) is None
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
        deadline = time.monotonic() + 30
        while tracing.collector.store is None and tracing.store is None and time.monotonic() < deadline:
            toolpath.flush(1)
            time.sleep(0.2)
    finally:
        if holder.poll() is None:
            holder.kill()
    with database_file_lock(str(db)), Store(f"sqlite:///{db}", create=False).engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD


@pytest.fixture(autouse=True)
def _no_store_env(monkeypatch):
    monkeypatch.delenv("TOOLPATH_STORE", raising=False)


def test_connections_that_open_one_new_file_at_once_all_open_it(tmp_path):
    """Each connection turns a new file to WAL; SQLite answers "database is locked" at once (no busy wait) to those
    that ask while another does: the connection retries instead of failing its store's opening."""
    from toolpath.store.engine import make_engine

    failures: list[BaseException] = []
    for n in range(40):
        path = tmp_path / f"new{n}.db"
        engines = [make_engine(f"sqlite:///{path}", echo=False)[0] for _ in range(8)]
        barrier = threading.Barrier(len(engines))

        def connect(engine: Any, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                with engine.connect() as conn:
                    assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            except BaseException as exc:  # every failure is reported below
                failures.append(exc)

        threads = [threading.Thread(target=connect, args=(engine,)) for engine in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        for engine in engines:
            engine.dispose()
    assert failures == []
