"""The spool's files (``toolpath collect --spool``): claims among processes, the bound under racing puts, a disk
that refuses a write, the size the files keep on disk, and what :mod:`marshal` gives back."""

from __future__ import annotations

import marshal
import math
import os
import sqlite3
import threading

import pytest

from tests.helpers import SPANS
from toolpath.collector import otlp
from toolpath.collector.limits import Limits
from toolpath.collector.prepare import SpanPreparer
from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord
from toolpath.store.spool import _WRITTEN, Spool, SpoolFull, _fields


def _record(span_id: str, **attributes: object) -> SpanRecord:
    return SpanRecord("ab" * 16, span_id, None, "execute_tool t", 1, 1, 2, attributes=dict(attributes))


def _drain(spool: Spool) -> list[str]:
    taken: list[str] = []
    while (batch := spool.take(1000)) is not None:
        taken += [r.span_id for r in batch.records]
        spool.done(batch)
    return taken


def _files(folder) -> list[str]:
    """The spool files in ``folder`` by name, without their lock, log and shared-memory companions."""
    return sorted({p.name.split(".")[0] for p in folder.iterdir()})


def test_empty_files_of_stopped_processes_are_removed_when_claimed(tmp_path):
    """Three workers stopped with their files drained; one restarts: it keeps one file, not three it never frees."""
    folder = tmp_path / "spool"
    workers = [Spool(folder) for _ in range(3)]
    for n, spool in enumerate(workers):
        spool.put([_record(f"{n:016x}")])
        assert _drain(spool) == [f"{n:016x}"]
        spool.close()
    heir = Spool(folder)
    assert _files(folder) == ["spool-0"]
    assert heir.pending_spans == 0
    heir.close()


def test_a_left_file_is_drained_then_removed_with_its_log_and_lock(tmp_path):
    folder = tmp_path / "spool"
    first, second = Spool(folder), Spool(folder)
    second.put([_record("02" * 8)])
    first.close()
    second.close()
    heir = Spool(folder)
    assert heir.pending_spans == 1
    assert _drain(heir) == ["02" * 8]
    assert _files(folder) == ["spool-0"]
    heir.close()


def test_two_collectors_on_one_folder_never_share_a_file(tmp_path):
    folder = tmp_path / "spool"
    first = Spool(folder)
    first.put([_record("01" * 8)])
    second = Spool(folder)  # first's file is held: a file of its own
    second.put([_record("02" * 8)])
    assert (first.pending_spans, second.pending_spans) == (1, 1)
    assert (_drain(second), _drain(first)) == (["02" * 8], ["01" * 8])
    first.close()
    second.close()


def test_racing_puts_never_pass_the_bound(tmp_path):
    spool = Spool(tmp_path / "spool", max_bytes=20_000)
    taken, refused = [], []
    lock = threading.Lock()

    def put(n: int) -> None:
        for k in range(10):
            try:
                spool.put([_record(f"{n:08x}{k:08x}", text="x" * 900)])
            except SpoolFull:
                with lock:
                    refused.append(1)
            else:
                with lock:
                    taken.append(1)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert refused and taken and len(taken) + len(refused) == 80
    assert spool.pending_bytes <= 20_000 and spool.pending_spans == len(taken)
    with sqlite3.connect(tmp_path / "spool" / "spool-0.sqlite") as conn:
        assert conn.execute("SELECT SUM(LENGTH(body)), SUM(spans) FROM batches").fetchone() == (
            spool.pending_bytes,
            len(taken),
        )
    spool.close()


def test_a_write_the_disk_refuses_is_a_refusal_and_leaves_the_counts(tmp_path):
    """A full disk (here: the file's page limit) refuses an export with :class:`SpoolFull` (a 503 the exporter
    retries), not the driver's error; what was spooled before stays, and later puts that fit go on."""
    spool = Spool(tmp_path / "spool")
    spool.put([_record("01" * 8)])
    spool._own.conn.execute("PRAGMA max_page_count = 8")
    with pytest.raises(SpoolFull, match="cannot be written"):
        spool.put([_record("02" * 8, text=os.urandom(200_000).hex())])
    assert spool.pending_spans == 1
    spool.put([_record("03" * 8)])
    assert _drain(spool) == ["01" * 8, "03" * 8]
    spool.close()


def test_the_files_shrink_once_a_burst_is_written(tmp_path):
    """What the spool holds on disk follows what waits: a burst written to the store leaves no big file or log."""
    folder = tmp_path / "spool"
    spool = Spool(folder)
    for n in range(40):
        spool.put([_record(f"{n:016x}", text=os.urandom(500_000).hex())])  # 40 MB waiting
    assert sum(p.stat().st_size for p in folder.iterdir()) > 40_000_000
    assert len(_drain(spool)) == 40
    spool.put([_record("ff" * 8)])
    assert sum(p.stat().st_size for p in folder.iterdir()) < 2_000_000
    for n in range(5):  # a few exports' worth: not worth compacting each time it empties
        spool.put([_record(f"{n:016x}", text=os.urandom(100_000).hex())])
    _drain(spool)
    assert sum(p.stat().st_size for p in folder.iterdir()) > 1_000_000
    spool.close()


def test_a_damaged_file_is_named_and_nothing_is_held_open(tmp_path):
    folder = tmp_path / "spool"
    first = Spool(folder)
    first.put([_record("01" * 8)])
    first.close()
    (folder / "spool-1.sqlite").write_bytes(b"not a database" * 100)
    opened = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ConfigError) as failed:
        Spool(folder)
    assert str(failed.value) == (
        f"--spool {folder}: spool-1.sqlite cannot be used (file is not a database); move it elsewhere to start "
        "without it"
    )
    assert len(os.listdir("/proc/self/fd")) == opened  # spool-0's connection and both locks let go
    (folder / "spool-1.sqlite").unlink()
    heir = Spool(folder)
    assert _drain(heir) == ["01" * 8]
    heir.close()


def test_files_left_by_others_are_written_before_this_processs_own(tmp_path):
    """The own file is fed while the drain works and may never be empty under load: what others left, all of it
    older, goes first."""
    folder = tmp_path / "spool"
    first, second = Spool(folder), Spool(folder)
    first.put([_record("00" * 8)])
    second.put([_record("01" * 8)])
    first.close()
    second.close()
    heir = Spool(folder)  # spool-0 its own, spool-1 left by another
    heir.put([_record("02" * 8)])
    batch = heir.take(1)
    assert batch is not None and [r.span_id for r in batch.records] == ["01" * 8]
    heir.done(batch)
    assert _drain(heir) == ["00" * 8, "02" * 8]
    heir.close()


def test_a_running_process_claims_what_a_stopped_one_left_later(tmp_path):
    folder = tmp_path / "spool"
    running, stopping, idle = Spool(folder), Spool(folder), Spool(folder)
    stopping.put([_record("01" * 8), _record("02" * 8)])
    assert running.claim_left() == 0  # still held
    stopping.close()
    idle.close()  # its file left empty: removed, not kept
    assert running.claim_left() == 2 and running.pending_spans == 2
    assert _drain(running) == ["01" * 8, "02" * 8]
    assert _files(folder) == ["spool-0"]
    running.close()


def _exactly(a: object, b: object) -> bool:
    """Equal, with the same types all the way down (a tuple is not a list, ``True`` is not ``1``), keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_exactly(v, b[k]) for k, v in a.items())  # type: ignore[index]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_exactly(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    return a == b


@pytest.mark.parametrize("encoding", ["pb", "json"])
def test_every_recorded_framework_s_spans_come_back_exactly_as_prepared(tmp_path, encoding):
    """What the decoders make of every recorded framework's export, prepared as the collector does, goes into the
    spool (never the direct write a value marshal refuses takes) and comes back with the same types and values."""
    content_type = "application/json" if encoding == "json" else "application/x-protobuf"
    spool = Spool(tmp_path / "spool")
    preparer = SpanPreparer(Redactor.build(), Limits())
    sent: list[SpanRecord] = []
    for path in sorted(SPANS.glob(f"*.otlp.{encoding}")):
        ready = preparer.prepare(otlp.decode(path.read_bytes(), content_type))
        spool.put(ready)
        sent += ready
    back: list[SpanRecord] = []
    while (batch := spool.take(100_000)) is not None:
        back += batch.records
        spool.done(batch)
    assert len(back) == len(sent) > 900
    for original, returned in zip(sent, back, strict=True):
        assert all(_exactly(getattr(original, f), getattr(returned, f)) for f in SpanRecord.__slots__), original
    spool.close()


def test_files_written_for_another_store_are_left_for_it(tmp_path, caplog):
    folder = tmp_path / "spool"
    theirs = Spool(folder, owner="sqlite:////data/a.db")
    theirs.put([_record("01" * 8)])
    empty_theirs = Spool(folder, owner="sqlite:////data/a.db")
    theirs.close()
    empty_theirs.close()
    ours = Spool(folder, owner="sqlite:////data/b.db")  # spool-0 is a.db's: not taken; spool-1, empty, removed
    assert ours.pending_spans == 0 and _files(folder) == ["spool-0", "spool-2"]
    assert ours.claim_left() == 0
    warned = [r.getMessage() for r in caplog.records if "holds spans for the store" in r.getMessage()]
    assert warned == [
        f"toolpath: spool {folder / 'spool-0.sqlite'} holds spans for the store sqlite:////data/a.db, not "
        "sqlite:////data/b.db: left for a collector of that store"
    ]  # once, not at every look
    ours.put([_record("02" * 8)])
    assert _drain(ours) == ["02" * 8]
    again = Spool(folder, owner="sqlite:////data/a.db")
    assert _drain(again) == ["01" * 8]
    ours.close()
    again.close()


def test_a_file_another_version_wrote_is_read_by_field_name_and_never_added_to(tmp_path):
    """A toolpath whose records had their fields in another order, one more, one fewer, left a backlog: it is read
    back by name (the dropped field gone, the new one its default), and new exports go to a file of this version."""
    folder = tmp_path / "spool"
    Spool(folder).close()
    older = ("span_id", "trace_id", "legacy", *(n for n in SpanRecord.__slots__[2:] if n != "scope"))
    record = _record("01" * 8, city="Lisbon")
    record.scope = "written by this version only"
    values = {"legacy": "gone", **{name: getattr(record, name) for name in SpanRecord.__slots__}}
    with sqlite3.connect(folder / "spool-0.sqlite") as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'fields'", (",".join(older),))
        body = marshal.dumps([tuple(values[name] for name in older)])
        conn.execute("INSERT INTO batches (spans, body) VALUES (1, ?)", (body,))
    spool = Spool(folder)
    spool.put([_record("02" * 8)])
    assert _files(folder) == ["spool-0", "spool-1"]  # the older file is drained, not fed
    batch = spool.take(100)
    assert batch is not None and batch.unreadable == 0
    [back] = batch.records
    assert (back.trace_id, back.span_id, back.attributes, back.scope) == ("ab" * 16, "01" * 8, {"city": "Lisbon"}, None)
    spool.done(batch)
    assert _drain(spool) == ["02" * 8] and _files(folder) == ["spool-1"]
    spool.close()


def test_a_record_is_written_with_every_field_in_the_order_the_file_names():
    record = SpanRecord(*(f"value {n}" for n in range(len(SpanRecord.__slots__))))
    assert _fields(record) == tuple(getattr(record, name) for name in _WRITTEN)
    assert SpanRecord.__slots__ == _WRITTEN
