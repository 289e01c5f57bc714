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


def test_db_prune(tmp_path):
    import time

    from tests.helpers.builders import agent_run
    from toolpath.collector.reconstruct import build_invocations, is_run_span
    from toolpath.store.store import Store

    now, day = time.time_ns(), 86_400 * 10**9
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    for n, (age, session) in enumerate([(40, "a"), (35, "a"), (1, "b")]):
        store.ingest(agent_run(n, now - age * day, session), build_invocations, is_run_span)
    dry = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "30d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would prune 6 span(s) of 2 trace(s), 2 invocation(s), 4 tool call(s), 1 session(s)" in dry.stdout
    assert store.counts()["spans"] == 9
    spans_only = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "36d", "--spans-only")
    assert spans_only.returncode == 0 and "pruned 3 span(s) of 1 trace(s), 0 invocation(s)" in spans_only.stdout
    pruned = run_cli(tmp_path, "db", "prune", "--store", "s.db", "--older-than", "30d")
    assert pruned.returncode == 0 and "pruned 3 span(s) of 1 trace(s), 2 invocation(s)" in pruned.stdout
    counts = store.counts()
    assert (counts["spans"], counts["invocations"], counts["sessions"]) == (3, 1, 1)


def test_db_prune_bad_input_is_one_line_and_creates_nothing(tmp_path):
    bad = run_cli(tmp_path, "db", "prune", "--store", "sqlite:///new.db", "--older-than", "30 days")
    assert bad.returncode == 2
    assert bad.stderr == (
        "error: --older-than '30 days': not a duration (a number and a unit s, m, h, d or w, e.g. 12h, 30d)\n"
    )
    missing = run_cli(tmp_path, "db", "prune", "--store", "sqlite:///new.db", "--older-than", "30d")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert not (tmp_path / "new.db").exists()
