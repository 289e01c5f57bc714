"""Each turn's text in the search index (migration 0012), kept as the turn is written; the sessions search through
it finds what the scan found, on SQLite (FTS5, trigram) and PostgreSQL (pg_trgm)."""

from __future__ import annotations

from sqlalchemy import text

from toolpath.model import Invocation, ToolCall
from toolpath.store import browse, turn_text
from toolpath.store.session_filter import SessionFilter


def _found(store, query: str) -> list[str]:
    return sorted(r["session_id"] for r in browse.session_page(store, SessionFilter(text=query)).rows)


def _fill(store) -> None:
    store.write([
        Invocation(invocation_id="a", session_id="s-a", prompt="Where is my Garage door?", response="fixed"),
        Invocation(invocation_id="b", session_id="s-b", prompt="hello", error="TimeoutError: slow",
                   tool_calls=[ToolCall(name="lookup_order", args={"order": "ORD-77"}, result={"state": "Größe"})]),
        Invocation(invocation_id="c", session_id="s-c", prompt="ab", response="x_y%z", attributes={"tier": "gold"}),
    ])  # fmt: skip


def test_the_search_finds_substrings_of_turns_and_calls_through_the_index(store):
    _fill(store)
    assert turn_text.matching(store.dialect, "garage") is not None  # the index answers these
    assert _found(store, "garage") == ["s-a"]  # any case, any part of a word
    assert _found(store, "arag") == ["s-a"]
    assert _found(store, "ord-77") == ["s-b"]  # a call's arguments
    assert _found(store, "lookup_ord") == ["s-b"]  # a call's name, "_" as itself
    assert _found(store, "timeouterror") == ["s-b"]
    assert _found(store, "größe") == ["s-b"]  # a call's result
    if store.dialect == "sqlite":  # the trigram index folds other letters' case too (PostgreSQL: as its locale does)
        assert _found(store, "GRÖßE") == ["s-b"]
    assert _found(store, "y%z") == ["s-c"]  # "%" as itself
    assert _found(store, '"tier"') == ["s-c"]  # the attributes' JSON text
    assert _found(store, "door?\x1ffixed") == []  # never across two parts
    assert _found(store, "s-b") == ["s-b"]  # a session id
    assert _found(store, "nowhere") == []


def test_a_short_text_is_searched_by_a_scan(store):
    _fill(store)
    assert turn_text.matching(store.dialect, "ab") is None
    assert _found(store, "ab") == ["s-c"]


def test_a_turn_written_again_is_indexed_again_and_a_turn_gone_leaves(store):
    _fill(store)
    store.write([Invocation(invocation_id="a", session_id="s-a", prompt="the attic now")])
    assert _found(store, "garage") == []
    assert _found(store, "attic") == ["s-a"]
    with store.engine.begin() as conn:
        from toolpath.store.ingest import forget_invocations, refresh_sessions

        forget_invocations(conn, ["a"])
        refresh_sessions(conn, ["s-a"])
        assert conn.execute(text("SELECT count(*) FROM turn_text WHERE invocation_id = 'a'")).scalar() == 0
    assert _found(store, "attic") == []


def test_a_new_turn_is_indexed_without_a_delete_and_a_rebuilt_one_keeps_one_row(store):
    from sqlalchemy import event

    from toolpath.collector.ingestor import rebuild
    from toolpath.collector.reconstruct import is_run_span
    from toolpath.model import invocation_key
    from toolpath.store.spanrecord import SpanRecord

    trace = "7" * 32

    def span(n: int, parent: int | None, **attributes) -> SpanRecord:
        return SpanRecord(trace_id=trace, span_id=f"{n:016x}", parent_span_id=None if parent is None else f"{parent:016x}",
                          name=f"span {n}", kind=1, start_time=n, end_time=n + 1, attributes=attributes)  # fmt: skip

    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    tool = {"gen_ai.operation.name": "execute_tool"}
    store.ingest([span(1, None, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}),
                  span(2, 1, **tool, **{"gen_ai.tool.name": "lookup_garage"})], rebuild, is_run_span)  # fmt: skip
    assert not [s for s in statements if s.startswith("DELETE FROM turn_text")]  # a new turn has no row to delete
    store.ingest([span(3, 1, **tool, **{"gen_ai.tool.name": "open_attic"})], rebuild, is_run_span)
    assert [s for s in statements if s.startswith("DELETE FROM turn_text")]
    session = browse.session_page(store, SessionFilter()).rows[0]["session_id"]
    assert _found(store, "lookup_garage") == _found(store, "open_attic") == [session]
    with store.engine.connect() as conn:
        rows = text("SELECT count(*) FROM turn_text WHERE invocation_id = :i")
        assert conn.execute(rows, {"i": invocation_key(trace, f"{1:016x}")}).scalar() == 1
