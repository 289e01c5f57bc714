"""A SQLite store and a spool are their owner's alone: the database file, its ``-wal`` and ``-shm``, and the spool's
files are created 0600 whatever the umask; one that exists keeps its mode, and one that other users may read is
named in one warning line."""

from __future__ import annotations

import logging
import os
import sqlite3

import pytest

from tests.helpers.file_modes import UMASKS, mode_of, umask
from toolpath.store.direct import reading
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.spool import Spool
from toolpath.store.store import Store

WARNINGS = "toolpath.private_files"


def _record(span_id: str) -> SpanRecord:
    return SpanRecord("ab" * 16, span_id, None, "execute_tool t", 1, 1, 2, attributes={"k": "v"})


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_a_new_store_its_log_and_shared_memory_are_0600(tmp_path, mask, caplog):
    database = tmp_path / "toolpath.db"
    with umask(mask):
        store = Store(f"sqlite:///{database}")
        try:
            store.pseudonym_key()
            store.write(spans=[_record("01" * 8)])
            files = [database, tmp_path / "toolpath.db-wal", tmp_path / "toolpath.db-shm"]
            assert all(f.exists() for f in files), sorted(p.name for p in tmp_path.iterdir())
            assert {f.name: mode_of(f) for f in files} == {f.name: 0o600 for f in files}
        finally:
            store.close()
    assert not [r for r in caplog.records if r.name == WARNINGS]


def test_an_existing_store_other_users_may_read_is_named_in_one_warning_and_keeps_its_mode(tmp_path, caplog):
    database = tmp_path / "shared.db"
    with umask(0o022):  # as SQLite, or toolpath before it made its files private, left it
        made = sqlite3.connect(database)
        made.execute("PRAGMA journal_mode=WAL")
        made.execute("CREATE TABLE t (x)")  # the -wal and -shm exist while this connection is open
        assert mode_of(database) == 0o644
        caplog.set_level(logging.WARNING, logger=WARNINGS)
        store = Store(f"sqlite:///{database}")
        store.close()
        made.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == WARNINGS]
    assert len(warnings) == 1, warnings
    assert f"{database} (mode 0644), {database}-wal (mode 0644), {database}-shm (mode 0644)" in warnings[0]
    assert "chmod 600" in warnings[0]
    assert mode_of(database) == 0o644  # the owner's to change, never changed behind their back


def test_a_store_read_through_its_driver_warns_too(tmp_path, caplog):
    database = tmp_path / "read.db"
    with umask(0o077):
        Store(f"sqlite:///{database}").close()
    os.chmod(database, 0o640)
    caplog.set_level(logging.WARNING, logger=WARNINGS)
    with reading(f"sqlite:///{database}") as reader:
        assert reader is not None
    warnings = [r.getMessage() for r in caplog.records if r.name == WARNINGS]
    assert len(warnings) == 1 and f"{database} (mode 0640)" in warnings[0], warnings


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_a_spools_files_are_0600(tmp_path, mask, caplog):
    folder = tmp_path / "spool"
    with umask(mask):
        spool = Spool(folder)
        try:
            spool.put([_record("02" * 8)])
            names = ["spool-0.sqlite", "spool-0.sqlite-wal", "spool-0.sqlite-shm", "spool-0.lock"]
            assert sorted(p.name for p in folder.iterdir()) == sorted(names)
            assert {name: mode_of(folder / name) for name in names} == dict.fromkeys(names, 0o600)
            assert mode_of(folder) == 0o700
        finally:
            spool.close()
    assert not [r for r in caplog.records if r.name == WARNINGS]


def test_an_existing_spool_file_other_users_may_read_is_warned_about(tmp_path, caplog):
    folder = tmp_path / "spool"
    folder.mkdir()
    with umask(0o022):
        sqlite3.connect(folder / "spool-0.sqlite").close()
    caplog.set_level(logging.WARNING, logger=WARNINGS)
    spool = Spool(folder)
    spool.put([_record("03" * 8)])
    spool.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == WARNINGS]
    assert len(warnings) == 1 and f"{folder / 'spool-0.sqlite'} (mode 0644)" in warnings[0], warnings
    assert "spans waiting for the store" in warnings[0]
    assert mode_of(folder / "spool-0.sqlite") == 0o644
