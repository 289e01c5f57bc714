"""`toolpath db`: the store's schema revision, upgraded and shown."""

from __future__ import annotations

from tests.helpers.cli import run_cli
from toolpath.store import migrate


def test_db_commands(tmp_path):
    upgraded = run_cli(tmp_path, "db", "upgrade", "--store", "sqlite:///s.db")
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"schema at revision {migrate.HEAD}" in upgraded.stdout
    current = run_cli(tmp_path, "db", "current", "--store", "sqlite:///s.db")
    assert current.returncode == 0 and f"revision {migrate.HEAD}" in current.stdout
    missing = run_cli(tmp_path, "db", "current", "--store", "sqlite:///missing.db")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_db_errors_are_one_line_and_create_nothing(tmp_path):
    typo = run_cli(tmp_path, "db", "upgrade", "--store", "sqlite:///new.db", "--revision", "zzz")
    assert typo.returncode == 2
    known = ", ".join(f"{n:04d}" for n in range(1, int(migrate.HEAD) + 1))
    assert typo.stderr == f"error: --revision 'zzz': no such revision (known: {known}, head)\n"
    assert not (tmp_path / "new.db").exists()
    (tmp_path / "folder.db").mkdir()
    folder = run_cli(tmp_path, "db", "current", "--store", "folder.db")
    assert folder.returncode == 2 and folder.stderr.startswith(
        "error: store sqlite:///folder.db: folder.db is a folder"
    )
    older = run_cli(tmp_path, "db", "upgrade", "--store", "sqlite:///s.db", "--revision", "0002")
    assert older.returncode == 0 and "schema at revision 0002" in older.stdout
