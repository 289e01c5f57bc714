"""Reviewers' labels as ``ReviewLabel``: stored as the same text on SQLite and PostgreSQL, read back as members, and
asked for by the UI's session filter and annotation form with the same text."""

from __future__ import annotations

import pytest

from tests.helpers.builders import invocation
from toolpath.store.annotations import REVIEW_LABELS, ReviewLabel, annotate, annotations_of
from toolpath.store.browse import session_page
from toolpath.ui.params import REVIEWS, BadRequest, session_filter


def test_review_labels_are_stored_as_their_text_and_read_back_as_members(store):
    store.write([invocation(1), invocation(2)])
    first, second = invocation(1).invocation_id, invocation(2).invocation_id
    annotate(store, first, author="Ada", label=ReviewLabel.FAIL)
    annotate(store, second, author="Bob", comment="fine, I suppose")
    with store.engine.connect() as conn:
        stored = dict(conn.exec_driver_sql("SELECT invocation_id, label FROM annotations").all())
    assert stored == {first: "fail", second: None} and type(stored[first]) is str
    notes = annotations_of(store, [first, second])
    assert [n.label for n in notes[first]] == [ReviewLabel.FAIL] and notes[first][0].exported()["label"] == "fail"
    assert [n.label for n in notes[second]] == [None]
    assert REVIEW_LABELS == ("pass", "fail") and REVIEWS == ("pass", "fail", "any")
    for review, sessions in (("fail", ["s-1"]), ("pass", []), ("any", ["s-2", "s-1"])):
        rows = session_page(store, session_filter({"review": review})).rows
        assert sorted(r["session_id"] for r in rows) == sorted(sessions), review
    with pytest.raises(BadRequest, match=r"^review='meh': expected one of pass, fail, any$"):
        session_filter({"review": "meh"})
