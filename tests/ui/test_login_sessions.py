"""The UI's login sessions table on its own: ids, expiry by an injected clock, the bound, and one file shared by
processes (a login or logout through one table is seen through another, as ``collect --ui --workers`` needs)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolpath.errors import ConfigError
from toolpath.ui.login_sessions import LoginSessions, SessionPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 5_000.0

    def __call__(self) -> float:
        return self.now


def test_ids_are_random_and_the_table_keeps_only_their_hash(tmp_path: Path) -> None:
    table = LoginSessions(path=tmp_path / "s.sqlite")
    ids = {table.open() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) >= 43 for i in ids)
    table.close()
    kept = sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT digest FROM sessions").fetchall()
    assert len(kept) == 50
    stored = b"".join(digest for (digest,) in kept)
    assert not any(i.encode() in stored for i in ids)


def test_idle_time_and_lifetime_end_a_session() -> None:
    clock = Clock()
    table = LoginSessions(SessionPolicy(10.0, 25.0, 5), clock=clock)
    sid = table.open()
    clock.now += 9.5
    assert table.check(sid)
    clock.now += 9.5  # 19 s after the login, 9.5 s after its last use
    assert table.check(sid)
    clock.now += 10.0
    assert not table.check(sid)  # idle
    sid = table.open()
    for _ in range(4):
        clock.now += 6.0
        assert table.check(sid)
    clock.now += 1.5  # 25.5 s after the login, though used 1.5 s ago
    assert not table.check(sid)


def test_the_oldest_sessions_make_room_and_expired_ones_go_first() -> None:
    clock = Clock()
    table = LoginSessions(SessionPolicy(100.0, 1000.0, 2), clock=clock)
    first = table.open()
    clock.now += 1
    second = table.open()
    clock.now += 1
    third = table.open()
    assert (table.check(first), table.check(second), table.check(third)) == (False, True, True)
    assert table.count() == 2
    clock.now += 150  # both idle
    table.open()
    assert table.count() == 1


def test_revoke_and_replace_end_a_session_and_unknown_ids_are_refused() -> None:
    table = LoginSessions()
    one, two = table.open(), table.open()
    table.revoke(one)
    assert not table.check(one) and table.check(two)
    three = table.open(replacing=two)
    assert not table.check(two) and table.check(three)
    table.revoke("never issued")
    assert not table.check("") and not table.check("x" * 10_000) and not table.check("never issued")


def test_processes_sharing_the_file_share_logins_and_logouts(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    here = LoginSessions(path=path)
    here.prepare()
    sid = here.open()
    code = (
        "import sys; from pathlib import Path; from toolpath.ui.login_sessions import LoginSessions\n"
        "t = LoginSessions(path=Path(sys.argv[1])); ok = t.check(sys.argv[2]); t.revoke(sys.argv[2])\n"
        "print(ok, t.check(sys.argv[2]))"
    )
    other = subprocess.run([sys.executable, "-c", code, str(path), sid], capture_output=True, text=True, timeout=60)
    assert other.stdout.split() == ["True", "False"], other.stderr
    assert not here.check(sid)  # revoked by the other process


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((0.0, 10.0, 1), "--session-idle: must be a finite time above zero"),
        ((10.0, float("inf"), 1), "--session-lifetime: must be a finite time above zero"),
        ((20.0, 10.0, 1), "--session-idle: longer than --session-lifetime"),
        ((1.0, 10.0, 0), "--max-sessions: must be a whole number of at least 1"),
    ],
)
def test_a_bad_policy_is_one_error_naming_the_option(values: tuple[float, float, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SessionPolicy(*values, options=("--session-idle", "--session-lifetime", "--max-sessions"))
