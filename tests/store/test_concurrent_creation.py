"""Several processes opening one new store at the same moment: each creates or migrates it under a lock (a file
lock beside a SQLite database, an advisory lock on PostgreSQL), so none fails on a table another just made."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.pgserver import postgres_server
from toolpath.store import migrate
from toolpath.store.store import Store

OPENER = """
import os, sys, time
while not os.path.exists(sys.argv[2]):  # every process waits at the line, then all go at once
    time.sleep(0.001)
if sys.argv[3] == "cli":
    from toolpath.cli import main
    sys.argv = ["toolpath", "db", "upgrade", "--store", sys.argv[1]]
    main()
else:
    from toolpath.store.store import Store
    Store(sys.argv[1]).close()
"""


def open_at_once(url: str, folder: Path, processes: int = 8) -> list[subprocess.CompletedProcess[str]]:
    go = folder / "go"
    started = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, url, str(go), "cli" if n % 2 else "library"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(processes)
    ]
    time.sleep(2.0)  # all of them imported and waiting
    go.touch()
    results = []
    for process in started:
        out, err = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def test_processes_creating_one_sqlite_store_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    results = open_at_once(url, tmp_path)
    assert [r.returncode for r in results] == [0] * len(results), "\n".join(r.stderr for r in results)
    assert not any("Traceback" in r.stderr for r in results)
    store = Store(url, create=False)
    with store.engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.HEAD
    store.close()


def test_processes_creating_one_postgresql_store_at_once(tmp_path):
    with postgres_server().running() as url:
        results = open_at_once(url, tmp_path)
        assert [r.returncode for r in results] == [0] * len(results), "\n".join(r.stderr for r in results)
        store = Store(url, create=False)
        with store.engine.connect() as conn:
            assert migrate.current_revision(conn) == migrate.HEAD
        store.close()
