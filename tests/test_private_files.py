"""The one way toolpath writes a file: 0600 when new whatever the umask, an existing file's mode kept (and named in
a warning when other users may read it), whole or not at all."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.file_modes import UMASKS, mode_of, umask
from toolpath.private_files import create_private, write_private

WARNINGS = "toolpath.private_files"


@pytest.mark.parametrize("mask", [*UMASKS, 0o277], ids=oct)
def test_a_new_file_is_0600_whatever_the_umask(tmp_path, mask):
    with umask(mask):
        write_private(tmp_path / "out.json", "naïve ✓\n")
        assert create_private(tmp_path / "store.db") is True
    assert (tmp_path / "out.json").read_bytes() == "naïve ✓\n".encode()
    assert mode_of(tmp_path / "out.json") == 0o600 and mode_of(tmp_path / "store.db") == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "store.db"]  # no temporary file left


def test_create_private_leaves_an_existing_file_alone(tmp_path):
    path = tmp_path / "store.db"
    path.write_bytes(b"data")
    path.chmod(0o640)
    assert create_private(path) is False
    assert path.read_bytes() == b"data" and mode_of(path) == 0o640


def test_an_existing_file_keeps_its_mode_and_is_named_once_when_others_may_read_it(tmp_path, caplog):
    path = tmp_path / "report.html"
    path.write_text("old")
    path.chmod(0o644)
    caplog.set_level(logging.WARNING, logger=WARNINGS)
    write_private(path, "new", what="a report")
    write_private(path, "newer", what="a report")
    assert path.read_text() == "newer" and mode_of(path) == 0o644
    warnings = [r.getMessage() for r in caplog.records if r.name == WARNINGS]
    assert warnings == [
        f"toolpath: other users may read {path} (mode 0644), which holds a report: chmod 600 makes it private "
        "(toolpath creates its files 0600 and leaves the mode of an existing one as it is)"
    ]


def test_no_warning_when_asked_for_none_or_when_the_file_is_private(tmp_path, caplog):
    shared, private = tmp_path / "shared.evalset.json", tmp_path / "private.json"
    for path, mode in ((shared, 0o664), (private, 0o600)):
        path.write_text("{}")
        path.chmod(mode)
    caplog.set_level(logging.WARNING, logger=WARNINGS)
    write_private(shared, "[]", warn_shared=False)
    write_private(private, "[]")
    assert not [r for r in caplog.records if r.name == WARNINGS]
    assert mode_of(shared) == 0o664 and mode_of(private) == 0o600


def test_a_failed_check_leaves_the_old_file_as_it_was(tmp_path):
    path = tmp_path / "cases.evalset.json"
    path.write_text("old")

    def refuse(temporary):
        assert temporary.read_text() == "new" and temporary.name.endswith("-cases.evalset.json")
        raise ValueError("not an eval set")

    with pytest.raises(ValueError, match="not an eval set"):
        write_private(path, "new", check=refuse)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["cases.evalset.json"]


def test_a_write_cut_short_by_the_file_size_limit_leaves_the_old_file_whole(tmp_path):
    """The kernel refuses the write past RLIMIT_FSIZE as it refuses one on a full disk: the old output stays, and
    nothing half-written is left beside it (in a child process: the limit is the process's)."""
    path = tmp_path / "out.json"
    path.write_text("old output\n")
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from toolpath.private_files import write_private
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            write_private({str(path)!r}, "x" * 100_000)
        except OSError as exc:
            print(exc.errno)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "27", done  # EFBIG
    assert path.read_text() == "old output\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_symbolic_link_is_followed(tmp_path):
    target = tmp_path / "results" / "latest.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    write_private(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    (tmp_path / "to-nowhere.json").symlink_to(tmp_path / "made.json")  # a link to nowhere: its target is made
    write_private(tmp_path / "to-nowhere.json", "made")
    assert (tmp_path / "made.json").read_text() == "made" and mode_of(tmp_path / "made.json") == 0o600


def test_a_path_that_is_no_regular_file_is_written_in_place(tmp_path):
    write_private(os.devnull, "into the void\n")  # as --output /dev/stdout would be: never replaced by a file
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    write_private(fifo, "through the pipe\n")
    assert reader.communicate(timeout=30)[0] == "through the pipe\n"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(OSError, match="is not a regular file"):
        write_private(os.devnull, "x", check=lambda _: None)
