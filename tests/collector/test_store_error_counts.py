"""``toolpath_spans_rejected{reason="store_error"}`` counts only the spans an export lost: when the store refuses a
span, the export is written trace by trace, and a store that goes down part-way has already committed the traces
before it. Those are counted as stored (and the refused span as quarantined), the rest as store errors, whether the
export was written without a spool or past one (too big to spool); on real SQLite and PostgreSQL, made to refuse a
span and to fail as unavailable by triggers."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.helpers.builders import otlp_json
from toolpath.collector import otlp
from toolpath.collector.ingestor import Ingestor, store_unavailable
from toolpath.store.spool import Spool
from toolpath.store.store import Store

_REFUSED, _DOWN = "refuse me", "store down"


@pytest.fixture
def failing_store(store: Store) -> Iterator[Store]:
    """The store, with triggers: a span named ``refuse me`` is refused (a value error), one named ``store down``
    fails the write as an unavailable store does (an ``OperationalError``)."""
    with store.engine.begin() as conn:
        if store.dialect == "sqlite":
            conn.execute(text(f"CREATE TRIGGER refuse BEFORE INSERT ON spans WHEN NEW.name = '{_REFUSED}' "
                              "BEGIN SELECT RAISE(ABORT, 'refused'); END"))  # fmt: skip
            conn.execute(text(f"CREATE TRIGGER down BEFORE INSERT ON spans WHEN NEW.name = '{_DOWN}' "
                              "BEGIN SELECT json('not json: the store is down'); END"))  # fmt: skip
        else:
            conn.execute(text("CREATE OR REPLACE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                              f"IF NEW.name = '{_REFUSED}' THEN RAISE EXCEPTION 'refused'; END IF; "
                              f"IF NEW.name = '{_DOWN}' THEN RAISE EXCEPTION 'down' USING ERRCODE = '57P03'; END IF; "
                              "RETURN NEW; END $$ LANGUAGE plpgsql"))  # fmt: skip
            conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON spans FOR EACH ROW EXECUTE FUNCTION refuse()"))
    yield store
    with store.engine.begin() as conn:
        if store.dialect == "sqlite":
            conn.execute(text("DROP TRIGGER refuse"))
            conn.execute(text("DROP TRIGGER down"))
        else:
            conn.execute(text("DROP TRIGGER refuse ON spans"))


def _export() -> bytes:
    """Four traces of three spans (an agent, two tool calls), in this order: a good one, one with a span the store
    refuses, one whose span takes the store down, and a good one."""
    resource_spans = []
    for n, name in ((1, None), (2, _REFUSED), (3, _DOWN), (4, None)):
        export = json.loads(otlp_json(f"{n:032x}", 2))
        if name is not None:
            export["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["name"] = name
        resource_spans += export["resourceSpans"]
    return json.dumps({"resourceSpans": resource_spans}).encode()


def _count(ingestor: Ingestor, name: str, reason: str | None = None) -> float:
    family = getattr(ingestor.metrics, name)
    return (family if reason is None else family.labels(reason))._value.get()


@pytest.mark.parametrize("spooled", [False, True], ids=["no-spool", "too-big-to-spool"])
def test_a_store_down_part_way_counts_as_store_errors_only_the_spans_not_stored(failing_store, tmp_path, spooled):
    spool = Spool(tmp_path / "spool", max_bytes=1) if spooled else None  # every export too big: written directly
    ingestor = Ingestor(failing_store, spool=spool)
    try:
        with pytest.raises(OperationalError) as raised:
            ingestor.store_records(otlp.decode(_export(), "application/json"))
        assert store_unavailable(raised.value)
        if spool is not None:
            assert _count(ingestor, "exports_unspooled", "too_big") == 1 and spool.pending_spans == 0
    finally:
        if spool is not None:
            spool.close()
    stored = [(r.trace_id, r.name) for t in range(1, 5) for r in failing_store.spans_of_trace(f"{t:032x}")]
    assert {t for t, _ in stored} == {f"{1:032x}", f"{2:032x}"}  # committed before the store went down
    assert len(stored) == 3 + 2 and (f"{2:032x}", _REFUSED) not in stored
    assert _count(ingestor, "spans_received") == 12
    assert _count(ingestor, "spans_stored") == 5 and ingestor.spans_stored == 5
    assert _count(ingestor, "spans_rejected", "quarantined") == 1
    assert _count(ingestor, "spans_rejected", "store_error") == 6  # trace 3, and trace 4 that was never tried
    assert _count(ingestor, "spans_rejected", "trace_limit") == 0
    assert _count(ingestor, "store_errors") == 1
