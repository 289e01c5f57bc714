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
