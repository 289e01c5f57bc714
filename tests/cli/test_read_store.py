"""``--read-store URL``: `toolpath sessions` and `toolpath ui` read a real streaming replica of the PostgreSQL
primary (``pg_basebackup -R``), while the UI's writes still go to ``--store``; the UI's header says how far behind
the replica is; a bad URL is one ``error:`` line naming the option."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.helpers.cli import COLUMNS, run_cli
from tests.helpers.collector import http_get
from tests.helpers.pgreplica import ReplicatedCluster, replicated
from tests.helpers.pgserver import postgres_server
from tests.helpers.ui_stores import support_session, tool_error_session
from toolpath.store.annotations import annotations_of
from toolpath.store.store import Store

TOKEN = "read-store-token"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ReplicatedCluster]:
    """A primary holding one support session, streamed to a replica that has replayed it."""
    with replicated(postgres_server()) as running:
        store = Store(running.primary_url)
        turns, spans = support_session()
        store.write(turns, spans)
        store.close()
        running.wait_replayed()
        yield running


def _replica_sql(cluster: ReplicatedCluster, sql: str) -> None:
    with psycopg.connect(f"host=127.0.0.1 port={cluster.replica_port} user=postgres dbname=toolpath_test") as conn:
        conn.execute(sql)


def _session_ids(result) -> set[str]:
    assert result.returncode == 0, result.stderr
    return {row["session_id"] for row in json.loads(result.stdout)}


def test_sessions_read_the_replica_and_see_only_what_it_replayed(cluster, tmp_path):
    replica = cluster.replica_url
    before = _session_ids(run_cli(tmp_path, "sessions", "list", "--read-store", replica, "--json"))
    assert len(before) == 1
    _replica_sql(cluster, "SELECT pg_wal_replay_pause()")
    try:
        late = tool_error_session()
        store = Store(cluster.primary_url)
        store.write([late], [])
        store.close()
        on_primary = _session_ids(run_cli(tmp_path, "sessions", "list", "--store", cluster.primary_url, "--json"))
        assert on_primary == before | {late.session_id}
        # --store is the primary, yet the list is the replica's: paused, it has not replayed the new session
        listed = run_cli(
            tmp_path, "sessions", "list", "--store", cluster.primary_url, "--read-store", replica, "--json"
        )
        assert _session_ids(listed) == before
        shown = run_cli(tmp_path, "sessions", "show", late.session_id, "--read-store", replica, "--json")
        assert shown.returncode == 2 and f"no session {late.session_id!r}" in shown.stderr
    finally:
        _replica_sql(cluster, "SELECT pg_wal_replay_resume()")
    cluster.wait_replayed()
    (session,) = before
    shown = run_cli(tmp_path, "sessions", "show", session, "--read-store", replica, "--json")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)["invocations"]) == 5


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "neither a database URL"),
        ("sqlite:///nowhere.db", "does not exist"),
        ("postgresql+psycopg://postgres@127.0.0.1:1/toolpath_test", "cannot open"),
        ("", "empty"),
    ],
)
def test_a_bad_read_store_is_one_error_line_naming_the_option(tmp_path, url, says):
    own = f"sqlite:///{tmp_path / 'own.db'}"
    Store(own).close()  # the UI's own store exists: the error is the replica's
    for command in (("sessions", "list"), ("sessions", "show", "s1"), ("ui", "--port", "0")):
        result = run_cli(tmp_path, *command, "--store", own, "--read-store", url)
        assert result.returncode == 2, (command, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --read-store") and says in lines[0], (command, lines)


def test_a_read_store_without_toolpaths_schema_is_refused(tmp_path, postgres_url):
    bare = postgres_url.rsplit("/", 1)[0] + "/postgres"  # the server's own database: no toolpath tables
    result = run_cli(tmp_path, "sessions", "list", "--read-store", bare)
    assert result.returncode == 2
    assert "error: --read-store" in result.stderr and "without toolpath's schema" in result.stderr


class UiProcess:
    """``toolpath ui`` as a real process on a free port."""

    def __init__(self, folder: Path, *args: str) -> None:
        env = {**os.environ, "COLUMNS": COLUMNS}
        env.pop("TOOLPATH_STORE", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolpath.cli", "ui", "--port", "0", "--token", TOKEN, *args],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, (line, self.process.stderr.read() if self.process.poll() is not None else "")
        self.base = f"http://127.0.0.1:{found.group(1)}"
        self.first_line = line

    def get(self, path: str) -> str:
        status, body, _ = http_get(self.base + path, TOKEN)
        assert status == 200, body[:500]
        return body.decode()

    def post(self, path: str, form: dict[str, str]) -> int:
        import urllib.request

        request = urllib.request.Request(self.base + path, data=urllib.parse.urlencode(form).encode(), method="POST")
        request.add_header("Authorization", f"Bearer {TOKEN}")
        request.add_header("Content-Type", "application/x-www-form-urlencoded")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):  # the 303 itself is the answer
                return None

        try:
            with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as reply:
                return reply.status
        except urllib.error.HTTPError as error:
            return error.code

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _header_status(page: str) -> str:
    found = re.search(r'<span class="replica( stale)?" role="status">([^<]*)</span>', page)
    assert found, "the header says nothing of the replica"
    return found.group(2)


def test_the_ui_reads_the_replica_shows_its_lag_and_writes_the_primary(cluster, tmp_path):
    turns, _ = support_session()
    ui = UiProcess(tmp_path, "--store", cluster.primary_url, "--read-store", cluster.replica_url)
    try:
        assert f"reading postgresql+psycopg://postgres@127.0.0.1:{cluster.replica_port}" in ui.first_line
        page = ui.get("/sessions")
        assert turns[0].session_id in page
        assert re.fullmatch(r"replica \d+\.\d s behind", _header_status(page))
        # a review is written to the primary (the replica, in recovery, refuses writes)
        assert ui.post(f"/turn/{turns[0].invocation_id}/annotations", {"label": "fail", "author": "ana"}) == 303
        primary = Store(cluster.primary_url)
        assert [n.label for n in annotations_of(primary, [turns[0].invocation_id])[turns[0].invocation_id]] == ["fail"]
        # the replica paused while the primary writes: the header shows it falling behind
        _replica_sql(cluster, "SELECT pg_wal_replay_pause()")
        try:
            time.sleep(1.2)
            late = tool_error_session().model_copy(update={"session_id": "written-late", "invocation_id": "late-1"})
            primary.write([late], [])
            deadline = time.monotonic() + 20
            lag = 0.0
            while time.monotonic() < deadline and lag < 1.0:
                lag = float(_header_status(ui.get("/sessions")).split()[1])
                time.sleep(0.2)
            assert lag >= 1.0
            assert "written-late" not in ui.get("/sessions")
        finally:
            _replica_sql(cluster, "SELECT pg_wal_replay_resume()")
        cluster.wait_replayed()
        page = ui.get("/sessions")
        assert "written-late" in page and _header_status(page) == "replica 0.0 s behind"
        primary.close()
    finally:
        ui.stop()
