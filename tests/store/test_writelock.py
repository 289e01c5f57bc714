"""The SQLite ingest write lock is one writer at a time across processes and threads, and a waiter gets it as soon
as it is let go (no polling sleep)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from toolpath.store.writelock import LOCK_SUFFIX, WriteLock, sqlite_file

HOLDER = textwrap.dedent(
    """
    import sys, time
    from toolpath.store.writelock import WriteLock
    lock = WriteLock(sys.argv[1])
    with lock:
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def test_a_waiter_in_another_process_gets_the_lock_the_moment_it_is_let_go(tmp_path) -> None:
    database = str(tmp_path / "store.db")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, database, "1.0"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with WriteLock(database):
            waited = time.monotonic() - started  # the other process held it for a second
        assert 0.5 <= waited < 1.5, waited
    finally:
        holder.wait(timeout=30)
    assert (tmp_path / f"store.db{LOCK_SUFFIX}").exists()


def test_threads_of_one_process_take_turns(tmp_path) -> None:
    import threading

    lock, inside, overlaps = WriteLock(str(tmp_path / "store.db")), [0], []

    def write() -> None:
        for _ in range(50):
            with lock:
                inside[0] += 1
                overlaps.append(inside[0])
                time.sleep(0.0005)
                inside[0] -= 1

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(overlaps) == 1 and len(overlaps) == 200


def test_an_in_memory_store_needs_no_lock_file() -> None:
    assert sqlite_file(":memory:") is None and sqlite_file(None) is None
    with WriteLock(None):
        pass
