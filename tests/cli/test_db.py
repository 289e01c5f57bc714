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
