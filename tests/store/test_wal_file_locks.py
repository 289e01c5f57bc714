"""SQLite keeps its write-ahead log alive by ``fcntl`` locks, which a process loses on *every* descriptor of the
database file when it closes *any* one of them. A store that opened and closed the file itself (to lock it for a
migration) dropped its connections' locks: the next process to close a connection then checkpointed and deleted the
log this process still wrote to, and every later commit here went to a file nobody else read."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import SPANS
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor
from toolpath.store.store import Store

OTHER_PROCESS = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("COMMIT")
conn.close()
"""
COUNT = """
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM spans").fetchone()[0])
"""


def test_commits_after_a_migration_are_seen_by_other_processes(tmp_path):
    db = tmp_path / "store.db"
    store = Store(f"sqlite:///{db}", create=False)  # as toolpath collect opens it, then migrates under the lock
    store.upgrade()
    store.counts()  # a connection of this process is open on the file
    subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(db)], check=True)  # opens, writes, closes
    records = otlp.decode((SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes(), "application/x-protobuf", [])
    Ingestor(store).store_records(records)
    assert store.counts()["spans"] == 13
    seen = subprocess.run([sys.executable, "-c", COUNT, str(db)], check=True, capture_output=True, text=True).stdout
    assert int(seen) == 13
    store.close()
