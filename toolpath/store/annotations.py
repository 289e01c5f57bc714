"""Reviewers' annotations of stored turns (the UI's human review): a label (pass or fail), a score and a comment,
with the reviewer's name and the time. Comments are redacted by the store's rules before they are kept, as
everything stored is."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select

from toolpath.errors import ConfigError
from toolpath.redact import Redactor
from toolpath.store import schema as t
from toolpath.store.store import Store

MAX_COMMENT = 10_000
MAX_AUTHOR = 256


class ReviewLabel(StrEnum):
    PASS = "pass"
    FAIL = "fail"


REVIEW_LABELS = tuple(ReviewLabel)


@dataclass(frozen=True)
class Annotation:
    invocation_id: str
    author: str
    label: ReviewLabel | None
    score: float | None
    comment: str | None
    created_at: int
    """Nanoseconds since the epoch, UTC."""

    def exported(self) -> dict[str, Any]:
        """As an eval-set export lists it: the time in ISO 8601, UTC."""
        when = datetime.fromtimestamp(self.created_at / 1e9, UTC).isoformat(timespec="seconds")
        return {**self.to_dict(), "created_at": when}

    def to_dict(self) -> dict[str, Any]:
        return {
            "invocation_id": self.invocation_id,
            "author": self.author,
            "label": self.label.value if self.label is not None else None,
            "score": self.score,
            "comment": self.comment,
            "created_at": self.created_at,
        }


def annotate(
    store: Store,
    invocation_id: str,
    *,
    author: str,
    label: ReviewLabel | None = None,
    score: float | None = None,
    comment: str | None = None,
) -> Annotation:
    """Keep a reviewer's annotation of the stored turn ``invocation_id``; a :class:`ConfigError` when the turn is
    not in the store, the author is missing, or it says nothing (no label, score or comment)."""
    author = author.strip()
    comment = (comment or "").strip() or None
    if not author:
        raise ConfigError("author: name the reviewer")
    if len(author) > MAX_AUTHOR or (comment is not None and len(comment) > MAX_COMMENT):
        raise ConfigError(f"an author is at most {MAX_AUTHOR} characters, a comment at most {MAX_COMMENT}")
    if label is None and score is None and comment is None:
        raise ConfigError("an annotation needs a label, a score or a comment")
    redactor = Redactor(pseudonym_key=store.pseudonym_key())
    if comment is not None:
        comment = redactor.text(comment)
    with store.engine.begin() as conn:
        found = conn.execute(
            select(t.invocations.c.invocation_id).where(t.invocations.c.invocation_id == invocation_id)
        ).first()
        if found is None:
            raise ConfigError(f"no turn {invocation_id!r} in the store")
        note = Annotation(invocation_id, redactor.text(author), label, score, comment, time.time_ns())
        conn.execute(t.turn_annotations.insert(), [note.to_dict()])
    return note


def annotations_of(store: Store, invocation_ids: Sequence[str]) -> dict[str, list[Annotation]]:
    """The annotations of each of ``invocation_ids``, oldest first."""
    a = t.turn_annotations
    out: dict[str, list[Annotation]] = {i: [] for i in invocation_ids}
    with store.engine.connect() as conn:
        for start in range(0, len(invocation_ids), 500):
            chunk = list(invocation_ids[start : start + 500])
            query = select(a).where(a.c.invocation_id.in_(chunk)).order_by(a.c.created_at, a.c.annotation_id)
            for r in conn.execute(query):
                label = ReviewLabel(r.label) if r.label in REVIEW_LABELS else None
                out[r.invocation_id].append(
                    Annotation(r.invocation_id, r.author, label, r.score, r.comment, r.created_at)
                )
    return out
