"""Migration 0011's backfill on PostgreSQL: the tables it reads analysed first (a store filled and upgraded at once
has none the server analysed), the same rows as before, and the planner's settings left as they were."""

from __future__ import annotations

from sqlalchemy import text

from tests.helpers.turn_usage_spans import kept, store_at_0010
from toolpath.store import turn_usage
from toolpath.store.store import Store


def test_migration_0011_analyses_the_spans_it_reads_and_fills_the_same_rows(fresh_postgres):
    store_at_0010(fresh_postgres, unanalysed=True)
    with Store(fresh_postgres, create=False).engine.connect() as conn:  # never analysed
        assert conn.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'spans'")).scalar() < 0
    store = Store(fresh_postgres, create=False)
    store.upgrade("0011")
    turns, rows = kept(store)
    assert turns == {"a": (107, 13, "from-resource"), "b": (1000, 0, "u-2")}
    assert rows == {("a", "m1", 0, 100, 10), ("a", "m1", 1, 7, 3), ("b", "", 0, 1000, 0)}
    with store.engine.connect() as conn:
        counted = dict(conn.execute(text(
            "SELECT relname, reltuples FROM pg_class WHERE relname IN ('spans', 'invocations')")).all())  # fmt: skip
    assert counted == {"spans": 6, "invocations": 2}  # ANALYZE's count; -1 for a table never analysed
    store.close()


def test_the_backfill_leaves_the_planner_settings_as_they_were(fresh_postgres):
    store_at_0010(fresh_postgres, unanalysed=True)
    with Store(fresh_postgres, create=False).engine.connect() as conn:  # never analysed
        assert conn.execute(text("SELECT reltuples FROM pg_class WHERE relname = 'spans'")).scalar() < 0
    store = Store(fresh_postgres, create=False)
    store.upgrade("0011")
    with store.engine.begin() as conn:
        conn.execute(text("SELECT set_config('enable_mergejoin', 'off', true)"))
        assert turn_usage.backfill(conn) == 2
        names = ("jit", "enable_seqscan", "enable_hashjoin", "enable_mergejoin")
        settings = ", ".join(f"current_setting('{name}')" for name in names)
        jit = conn.execute(text("SELECT reset_val FROM pg_settings WHERE name = 'jit'")).scalar()
        assert tuple(conn.execute(text(f"SELECT {settings}")).one()) == (jit, "on", "on", "off")
    turns, _ = kept(store)
    assert turns == {"a": (107, 13, "from-resource"), "b": (1000, 0, "u-2")}
    store.close()
