"""Commands run where the process itself is unusual: a file-size limit or a full disk under an output, a console
that cannot print every character, a working directory deleted under the command. Each gets one ``error:`` line
(or a complete result), never a traceback or a half-written file. Real processes: the limit, the encoding and the
working directory are a process's own."""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import COLUMNS

FILE_SIZE_LIMIT = 40_000
"""Bytes a file may reach: past what opening the store needs (SQLite's -shm file is 32 KiB), short of the outputs."""
CASES = "".join(
    json.dumps({"prompt": f"turn {n} " + "x" * 2000, "predicted_trajectory": [], "reference_trajectory": []}) + "\n"
    for n in range(40)
)


def toolpath(
    cwd: Path, *args: str, env: dict[str, str] | None = None, limit: int | None = None
) -> subprocess.CompletedProcess:
    """``toolpath ARGS`` as a process in ``cwd``, with ``env`` on top of this one's and at most ``limit`` bytes a
    file (RLIMIT_FSIZE)."""

    def file_size_limit() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    environment = {**os.environ, "COLUMNS": COLUMNS, **(env or {})}
    environment.pop("TOOLPATH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolpath.cli", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=file_size_limit,
    )


def only_error(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.fixture
def workdir(tmp_path, demo_dir) -> Path:
    shutil.copy(demo_dir / "toolpath.db", tmp_path / "toolpath.db")
    (tmp_path / "cases.jsonl").write_text(CASES)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "output"),
    [
        (("eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--output", "results.json"), "results.json"),
        (("export", "--format", "evalset", "--output", "sessions.evalset.json"), "sessions.evalset.json"),
        (("report", "--html", "report.html"), "report.html"),
    ],
)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_an_output_past_the_file_size_limit_is_one_error_and_no_half_file(workdir, args, output, existing):
    if existing:
        (workdir / output).write_text("the previous output\n")
        (workdir / output).chmod(0o600)  # private: no warning line beside the error
    if args[0] == "report":  # a run of its own, past the limit whatever runs other tests added to the demo store
        made = toolpath(workdir, "eval", "cases.jsonl", "--metrics", "trajectory_exact_match", "--store",
                        "sqlite:///toolpath.db", "--quiet")  # fmt: skip
        assert made.returncode == 0, made.stderr
        args = (*args, "--run", latest_run(workdir / "toolpath.db"))
    before = sorted(p for p in os.listdir(workdir) if not p.endswith(("-wal", "-shm")))
    done = toolpath(workdir, *args, limit=FILE_SIZE_LIMIT)
    left = "it is as it was" if existing else "no file was made"
    assert only_error(done, 1) == f"error: {output}: not written (File too large); {left}"
    assert sorted(p for p in os.listdir(workdir) if not p.endswith(("-wal", "-shm"))) == before  # no temporary file
    if existing:
        assert (workdir / output).read_text() == "the previous output\n"
    assert toolpath(workdir, *args).returncode == 0  # the same command, without the limit, writes it whole


def latest_run(db: Path) -> str:
    """The id of the newest run in the store ``db``."""
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT run_id FROM eval_runs ORDER BY started_at DESC LIMIT 1").fetchone()[0])


def _small_disk_available() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _small_disk_available(), reason="mounting a small tmpfs needs root and a mount namespace")
def test_an_output_on_a_full_disk_is_one_error_and_no_half_file(workdir):
    """A real full disk (a 64 KiB tmpfs mounted over the output's folder, in the command's own namespace)."""
    disk = workdir / "disk"
    disk.mkdir()
    command = shlex.join([sys.executable, "-m", "toolpath.cli", "eval", "cases.jsonl", "--metrics",
                          "trajectory_exact_match", "--output", "disk/results.json"])  # fmt: skip
    script = f"mount -t tmpfs -o size=64k none disk && {command}; code=$?; ls -A disk >&2; exit $code"
    env = {**os.environ, "COLUMNS": COLUMNS}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=workdir, capture_output=True, text=True, env=env)
    lines = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    assert lines[0] == "error: disk/results.json: not written (No space left on device); no file was made"
    assert lines[1:] == []  # ls: the disk is empty, no temporary file left on it


def test_a_console_that_cannot_print_every_character(workdir):
    """PYTHONIOENCODING=ascii: the summary table (with its em dash) prints with an escape, and JSON is ASCII that
    reads back as the same rows as a UTF-8 console's."""
    ascii_only = {"PYTHONIOENCODING": "ascii"}
    (workdir / "one.jsonl").write_text(CASES.splitlines()[0] + "\n")  # one row: its std is shown as an em dash
    table = toolpath(workdir, "eval", "one.jsonl", "--metrics", "trajectory_exact_match", env=ascii_only)
    assert table.returncode == 0 and "Traceback" not in table.stderr, table.stderr
    assert "\\u2014" in table.stdout and "trajectory_exact_match" in table.stdout
    table.stdout.encode("ascii")
    store_sql = "UPDATE invocations SET prompt = 'Réglez le thermostat — 21 °C 🌡' WHERE rowid = (SELECT max(rowid) FROM invocations)"
    import sqlite3

    with sqlite3.connect(workdir / "toolpath.db") as conn:
        conn.execute(store_sql)
    conn.close()
    listed = toolpath(workdir, "sessions", "list", "--json", "--limit", "500", env=ascii_only)
    utf8 = toolpath(workdir, "sessions", "list", "--json", "--limit", "500", env={"PYTHONIOENCODING": "utf-8"})
    assert listed.returncode == 0, listed.stderr
    listed.stdout.encode("ascii")
    assert json.loads(listed.stdout) == json.loads(utf8.stdout)
    assert "Réglez le thermostat — 21 °C 🌡" in json.dumps(json.loads(listed.stdout), ensure_ascii=False)
    missing = toolpath(workdir, "eval", "absent—file.jsonl", "--metrics", "trajectory_exact_match", env=ascii_only)
    said = only_error(missing, 2)  # click writes its lines to an ASCII stream as UTF-8, rich's console escapes
    assert said in ("error: absent\\u2014file.jsonl: no such file", "error: absent—file.jsonl: no such file")


def test_a_working_directory_deleted_under_the_command(tmp_path):
    """A relative SQLite path names no file once the working directory is gone: one error, nothing made anywhere."""
    (tmp_path / "cases.jsonl").write_text(CASES)
    gone = tmp_path / "gone"
    gone.mkdir()
    base = [sys.executable, "-m", "toolpath.cli", "eval", str(tmp_path / "cases.jsonl"), "--metrics",
            "trajectory_exact_match", "--store"]  # fmt: skip
    for store in ("sqlite:///rel.db", "rel.db"):
        gone.mkdir(exist_ok=True)
        script = f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {shlex.join([*base, store])}"
        done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120)
        assert only_error(done, 2) == (
            "error: store sqlite:///rel.db: the working directory no longer exists, so the relative path 'rel.db' "
            "names no file: give an absolute path, or run the command from a folder that exists"
        )
        assert sorted(os.listdir(tmp_path)) == ["cases.jsonl"]
    listed = subprocess.run(
        ["sh", "-c", f"mkdir {shlex.quote(str(gone))} && cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} "
         f"&& exec {shlex.join([sys.executable, '-m', 'toolpath.cli', 'sessions', 'list', '--store', 'rel.db'])}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert only_error(listed, 2) == "error: store rel.db: a relative path, and the working directory no longer exists"
