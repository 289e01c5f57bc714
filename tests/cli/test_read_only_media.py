"""A store on read-only media, as users meet it: commands that read it work, commands that write it are refused in
one line saying it is read-only, and nothing is written.

The media are real: the store's folder bind-mounted read-only in a mount namespace of the command's own (``unshare
-m``, which needs root or user namespaces; skipped where neither is allowed). Permission bits are no test of this
as root (root writes through a 0555 folder), so the folder made read-only by ``chmod`` runs only as another user.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import COLUMNS

CASES = '{"prompt": "a", "predicted_trajectory": [], "reference_trajectory": []}\n'


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = "mount --bind / /mnt 2>/dev/null || mount -t tmpfs none /mnt"
    for flags in (["-m"], ["-r", "-m"]):
        done = subprocess.run(["unshare", *flags, "sh", "-c", probe], capture_output=True, timeout=30)
        if done.returncode == 0:
            return True
    return False


MOUNTS = _can_mount()


def on_read_only_media(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``toolpath ARGS`` run with ``folder`` mounted read-only over itself (in the command's own namespace: the
    mount ends with it)."""
    command = shlex.join([sys.executable, "-m", "toolpath.cli", *args])
    folder_arg = shlex.quote(str(folder))
    script = f"mount --bind {folder_arg} {folder_arg} && mount -o remount,ro,bind {folder_arg} && exec {command}"
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    env = {**os.environ, "COLUMNS": COLUMNS}
    env.pop("TOOLPATH_STORE", None)
    return subprocess.run(
        ["unshare", *flags, "sh", "-c", script], cwd=folder.parent, capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def media(tmp_path, demo_dir) -> Path:
    """A folder holding a copy of the demo's store, as a read-only medium would (closed: no -wal or -shm)."""
    folder = tmp_path / "media"
    folder.mkdir()
    shutil.copy(demo_dir / "toolpath.db", folder / "toolpath.db")
    (tmp_path / "cases.jsonl").write_text(CASES)
    return folder


needs_mount = pytest.mark.skipif(
    not MOUNTS, reason="no mount namespace here (unshare -m needs root or user namespaces)"
)


@needs_mount
def test_reading_commands_work_on_read_only_media(media):
    store = str(media / "toolpath.db")
    listed = on_read_only_media(media, "sessions", "list", "--store", store, "--limit", "3")
    assert listed.returncode == 0, listed.stderr
    assert "3 of 72 sessions shown" in listed.stdout
    runs = on_read_only_media(media, "runs", "list", "--store", store, "--json")
    assert runs.returncode == 0 and '"run_id"' in runs.stdout, runs.stderr
    same = on_read_only_media(media, "sessions", "list", "--store", f"sqlite:///{store}?mode=ro", "--limit", "3")
    assert same.returncode == 0 and same.stdout == listed.stdout, same.stderr
    assert sorted(os.listdir(media)) == ["toolpath.db"]


@needs_mount
@pytest.mark.parametrize(
    ("args", "doing"),
    [
        (("eval", "cases.jsonl", "--metrics", "trajectory_exact_match"), "toolpath eval stores its run in it"),
        (("db", "prune", "--older-than", "1d"), "toolpath db prune deletes from it"),
        (("demo",), "toolpath demo stores its runs in it"),
    ],
)
def test_writing_commands_are_refused_in_one_line(media, args, doing):
    before = (media / "toolpath.db").read_bytes()
    done = on_read_only_media(media, *args, "--store", str(media / "toolpath.db"))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: store sqlite:///{media / 'toolpath.db'} is read-only (on a read-only file system): {doing}\n"
    )
    assert (media / "toolpath.db").read_bytes() == before


@needs_mount
def test_a_log_with_commits_and_no_shm_file_on_read_only_media_says_why_it_cannot_be_read(media):
    """SQLite needs the -shm file beside a log it reads; on read-only media it cannot make one, and immutable would
    skip the log's commits: the error says so, and how to fix it."""
    path = media / "toolpath.db"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("DELETE FROM eval_runs")
    writer.commit()
    shutil.copy(path.with_name("toolpath.db-wal"), media / "kept-wal")
    writer.close()  # folds the log in and deletes it: put the commits' log back, without its -shm
    shutil.copy(media / "kept-wal", path.with_name("toolpath.db-wal"))
    (media / "kept-wal").unlink()
    done = on_read_only_media(media, "runs", "list", "--store", str(path))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: store sqlite:///{path}: cannot open (unable to open database file); it is on a read-only file system and toolpath.db-wal holds commits"), done.stderr  # fmt: skip
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="permission bits do not stop root")
def test_a_folder_read_only_to_its_user(media):
    """Without a mount: the folder 0555, the file 0444. Reading works through ?immutable=1 (nothing writes the
    store), and the plain URL's error says why it cannot be opened; a writing command is refused."""
    from tests.helpers.cli import run_process

    (media / "toolpath.db").chmod(0o444)
    media.chmod(0o555)
    try:
        plain = run_process(media.parent, "runs", "list", "--store", str(media / "toolpath.db"))
        assert plain.returncode == 2 and "is read-only to this user" in plain.stderr, plain.stderr
        url = f"sqlite:///{media / 'toolpath.db'}?immutable=1"
        assert run_process(media.parent, "runs", "list", "--store", url).returncode == 0
        refused = run_process(
            media.parent, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store", url
        )
        assert refused.returncode == 2 and "is read-only (immutable=1)" in refused.stderr
    finally:
        media.chmod(0o755)
