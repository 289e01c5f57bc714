"""SQLite stores opened read-only: ``?mode=ro`` and ``?immutable=1`` hold (reads work, writes are one error and
leave the file as it was), SQLite's other options reach SQLite, and an option nobody reads is an error. Stores on a
read-only file system are in tests/cli/test_read_only_media.py (they need a mount of their own)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.helpers.builders import invocation
from toolpath.errors import ConfigError
from toolpath.store import migrate
from toolpath.store.store import Store


def run(run_id: str) -> dict:
    """An evaluation run's row."""
    return {"run_id": run_id, "kind": "dataset", "dataset": "d.jsonl", "metrics": [], "started_at": 1,
            "finished_at": 2, "row_count": 0, "summary": {}}  # fmt: skip


def filled(path: Path) -> Path:
    """A store at ``path`` with one invocation and one evaluation run, closed (its log folded into the file)."""
    store = Store(f"sqlite:///{quote(str(path))}")
    store.write([invocation(1)])
    store.write_eval_run(run("r1"), [])
    store.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("option", ["mode=ro", "immutable=1"])
def test_a_read_only_option_reads_and_refuses_every_write(tmp_path, option):
    path = filled(tmp_path / "base.db")
    before = digest(path)
    store = Store(f"sqlite:///{path}?{option}")
    assert store.read_only == option
    assert [run["run_id"] for run in store.list_eval_runs()] == ["r1"]
    assert [inv.invocation_id for inv in store.list_invocations()] == [invocation(1).invocation_id]
    with pytest.raises(ConfigError, match=rf"^store sqlite:///.*base\.db\?{option} is read-only \({option}\): "):
        store.write_eval_run(run("r2"), [])
    with pytest.raises(ConfigError, match=r"is read-only"):
        store.write([invocation(2)])
    store.close()
    assert digest(path) == before
    assert [run["run_id"] for run in Store(f"sqlite:///{path}").list_eval_runs()] == ["r1"]  # nothing was added


def test_a_command_that_writes_is_refused_before_it_starts(tmp_path):
    path = filled(tmp_path / "base.db")
    with pytest.raises(ConfigError) as refused:
        Store(f"sqlite:///{path}?mode=ro", writing="toolpath eval stores its run in it")
    assert (
        str(refused.value)
        == f"store sqlite:///{path}?mode=ro is read-only (mode=ro): toolpath eval stores its run in it"
    )
    Store(f"sqlite:///{path}", writing="toolpath eval stores its run in it").close()  # writable: no error


def test_a_read_only_store_with_an_older_schema_says_it_cannot_be_upgraded(tmp_path):
    path = tmp_path / "old.db"
    Store(f"sqlite:///{path}", create=False).upgrade("0005")
    with pytest.raises(ConfigError) as refused:
        Store(f"sqlite:///{path}?mode=ro")
    assert str(refused.value) == (
        f"store sqlite:///{path}?mode=ro is read-only (mode=ro) and its schema is at revision 0005, older than this "
        f"toolpath's ({migrate.HEAD}): upgrade it once where it can be written (toolpath db upgrade)"
    )


def test_immutable_over_commits_the_log_holds_is_refused_and_mode_ro_reads_them(tmp_path):
    """SQLite does not read the -wal file of an immutable database: the commits in it would be silently missing."""
    path = filled(tmp_path / "base.db")
    writer = sqlite3.connect(path)  # held open: its commits stay in base.db-wal
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("DELETE FROM eval_runs")
    writer.commit()
    try:
        assert (tmp_path / "base.db-wal").stat().st_size > 0
        with pytest.raises(ConfigError, match=r"immutable=1 would not read the commits base\.db-wal holds"):
            Store(f"sqlite:///{path}?immutable=1")
        assert Store(f"sqlite:///{path}?mode=ro").list_eval_runs() == []  # the log's commit is read
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("mod=ro", "unknown option 'mod' (SQLite's and its driver's: cache, cached_statements, "),
        ("mode=readonly", "mode='readonly' is not one of SQLite's modes (ro, rw, rwc, memory)"),
        ("immutable=maybe", "immutable='maybe': expected 1 or 0"),
        ("mode=ro&mode=rw", "option 'mode' given 2 times"),
    ],
)
def test_an_option_sqlite_would_not_read_is_an_error(tmp_path, query, said):
    path = filled(tmp_path / "base.db")
    with pytest.raises(ConfigError) as refused:
        Store(f"sqlite:///{path}?{query}")
    assert str(refused.value).startswith(f"store sqlite:///{path}?{query}: {said}")


def test_sqlite_options_reach_sqlite_and_a_path_in_need_of_quoting_stays_the_same_file(tmp_path):
    folder = tmp_path / "a folder #1 ?%"
    folder.mkdir()
    path = filled(folder / "base.db")
    store = Store(f"sqlite:///{quote(str(path))}?mode=ro&cache=private&timeout=5")  # a URL's path, quoted
    assert [run["run_id"] for run in store.list_eval_runs()] == ["r1"]
    assert store.database_file == str(path)
    with store.engine.connect() as conn:  # the connection is SQLite's read-only one, not a driver's promise
        assert conn.exec_driver_sql("PRAGMA query_only").scalar() == 0
        with pytest.raises(ConfigError, match="read-only"):
            conn.exec_driver_sql("CREATE TABLE t (x)")
    store.close()
    with pytest.raises(ConfigError, match=r"cannot open \(unable to open database file\)"):
        Store(f"sqlite:///{tmp_path / 'missing.db'}?mode=ro")  # read-only makes no new file
    assert not (tmp_path / "missing.db").exists()


def test_a_rollback_journal_store_opens_read_only_too(tmp_path):
    """A store whose file is not in WAL mode (made by another program, or copied as one file): opening it read-only
    does not try to change its journal mode, which would be a write."""
    path = filled(tmp_path / "base.db")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    store = Store(f"sqlite:///{path}?mode=ro")
    assert [run["run_id"] for run in store.list_eval_runs()] == ["r1"]
    store.close()
