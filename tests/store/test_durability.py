"""Ingest's commits are on disk when ``durable_write`` ends, and the wait for the disk comes after the write lock is
let go (so the next writer does not wait for it); every pooled connection stays ``synchronous=FULL``."""

from __future__ import annotations

import pytest

from toolpath.store import durability
from toolpath.store.store import Store

INSERT = (
    "INSERT INTO eval_jobs (invocation_id, evaluator, status, enqueued_at, attempts) "
    "VALUES (?, 'default', 'pending', 1, 0)"
)


@pytest.fixture
def sqlite_store(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def pooled_settings(store: Store) -> set[int]:
    conns = [store.engine.connect() for _ in range(3)]
    try:
        return {conn.exec_driver_sql("PRAGMA synchronous").scalar() for conn in conns}
    finally:
        for conn in conns:
            conn.close()


def test_the_log_is_synced_after_the_lock_is_let_go(sqlite_store, monkeypatch, tmp_path):
    synced: list[tuple[str, bool, int]] = []

    def sync(path: str) -> None:
        with sqlite_store.engine.connect() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM eval_jobs").scalar()
        synced.append((path, sqlite_store.write_lock._threads.locked(), stored))

    monkeypatch.setattr(durability, "sync_file", sync)
    with sqlite_store.durable_write() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL: the commit does not sync
        conn.exec_driver_sql(INSERT, ("a",))
        assert not synced
    # committed, the lock free, then synced: the log of this very file
    assert synced == [(f"{tmp_path / 'store.db'}-wal", False, 1)]
    assert pooled_settings(sqlite_store) == {2}  # FULL again


def test_a_failed_write_is_rolled_back_and_not_synced(sqlite_store, monkeypatch):
    synced: list[str] = []
    monkeypatch.setattr(durability, "sync_file", synced.append)
    with pytest.raises(ZeroDivisionError), sqlite_store.durable_write() as conn:
        conn.exec_driver_sql(INSERT, ("b",))
        _ = 1 / 0
    assert synced == []
    assert pooled_settings(sqlite_store) == {2}
    with sqlite_store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM eval_jobs").scalar() == 0


def test_sync_file_flushes_a_file_and_passes_over_a_log_already_checkpointed_away(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"frames")
    durability.sync_file(str(path))
    durability.sync_file(str(tmp_path / "gone"))  # no error: what it held is in the database, synced


def test_an_in_memory_store_writes_as_before(monkeypatch):
    store = Store("sqlite://")
    monkeypatch.setattr(durability, "sync_file", lambda path: pytest.fail("nothing to sync"))
    with store.durable_write() as conn:
        conn.exec_driver_sql(INSERT, ("c",))
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM eval_jobs").scalar() == 1


FILL = (  # about 100 pages of the log a commit
    "INSERT INTO filler SELECT randomblob(4000) FROM "
    "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i FROM n)"
)


def log_frames(store: Store) -> int:
    """Pages in the log since it last started over (checkpointing them, which the next writer's start needs)."""
    with store.engine.connect() as conn:
        return conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()[1]


@pytest.mark.parametrize("write", ["durable", "redoable", "plain"])
def test_the_collectors_writes_checkpoint_the_log_every_ten_thousand_pages_others_every_thousand(sqlite_store, write):
    with sqlite_store.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE filler (x)")
    log_frames(sqlite_store)
    for _ in range(15):  # some 1,500 pages
        if write == "plain":
            with sqlite_store.engine.begin() as conn:
                conn.exec_driver_sql(FILL)
        else:
            with sqlite_store.durable_write() if write == "durable" else sqlite_store.redoable_write() as conn:
                conn.exec_driver_sql(FILL)
    frames = log_frames(sqlite_store)
    if write == "plain":  # checkpointed once past 1,000 pages: the log started over
        assert frames < durability.SQLITE_AUTOCHECKPOINT
    else:
        assert durability.SQLITE_AUTOCHECKPOINT < frames < durability.CHECKPOINT_PAGES
    conns = [sqlite_store.engine.connect() for _ in range(3)]
    try:
        assert {c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() for c in conns} == {1000}
    finally:
        for c in conns:
            c.close()
