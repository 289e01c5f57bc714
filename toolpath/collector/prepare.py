"""A span made ready for the store: cleaned (:mod:`.clean`), redacted (:class:`~toolpath.redact.Redactor`) and
clipped (:class:`~.limits.Limits`), in that order, with a fast path for the usual span, which none of the three
would change.

The fast path proves a span unchanged with a few tests over all of its text at once instead of a walk per value:
its attribute values are strings, small integers, booleans or finite floats (or flat lists of them); its keys were
each found plain once (clean, not secret, no rule touches them); and the text of its values, name, status message
and scope, joined by line breaks (each distinct text once), has no NUL or lone surrogate, passes none of the
redactor's cheap tests and no value is over the length limit. Each test holds for the joined text if it holds for a
value in it (a substring test), so the joined text passing proves every value passes. Anything else — events, a
resource not seen plain before, a custom redaction pattern, a suspicious string — takes the full path, which
decides.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

from toolpath.collector.clean import (
    MAX_TIME,
    clean_span,
    clean_value,
    fit_names,
    is_clean_text,
    is_span_id,
    span_text_fits,
)
from toolpath.collector.limits import Limits
from toolpath.redact import Redactor
from toolpath.store.spanrecord import SpanRecord

logger = logging.getLogger("toolpath.collector.ingestor")
_PLAIN_KEYS_KEPT = 4096
_ONLY_TEXT = frozenset({str})
_SMALL_INT = 10**14
"""Integers below this are never card numbers (15–16 digits), so redaction leaves them as they are."""


class SpanPreparer:
    """:meth:`prepare`: records cleaned, redacted and clipped (in place), the usual ones untouched."""

    def __init__(self, redactor: Redactor | None, limits: Limits | None = None) -> None:
        self.redactor = redactor
        self.limits = limits
        self._plain_keys: set[str] = set()
        self._plain_resource: Any = None
        """The last resource found plain (the spans of one resource share its dict): kept, so its id stays its."""
        self.fast = 0
        """Spans that took the fast path (for tests and benchmarks)."""

    def prepare(self, records: list[SpanRecord]) -> list[SpanRecord]:
        """``records`` ready for the store, in their order; a span that cannot be redacted is quarantined (logged,
        counted, left out), as nothing may be stored unredacted."""
        return [record for record in self.prepare_each(records) if record is not None]

    def prepare_each(self, records: list[SpanRecord]) -> list[SpanRecord | None]:
        """Each of ``records`` ready for the store, at its place; ``None`` where one was quarantined."""
        if self.redactor is not None and not self.redactor.has_prefilters:  # custom rules: no cheap proof
            texts: list[list[str] | None] = [None] * len(records)
        else:
            texts = [self._texts_if_plain(record) for record in records]
        candidates = [t for t in texts if t is not None]
        # each distinct text once: spans repeat most of theirs (names, keys' values, a run's arguments)
        if candidates and self._text_unchanged({text for group in candidates for text in group}):
            unchanged = [t is not None for t in texts]
        else:  # something somewhere may change: span by span
            unchanged = [t is not None and self._text_unchanged(t) for t in texts]
        ready: list[SpanRecord | None] = []
        for record, plain in zip(records, unchanged, strict=True):
            if plain:
                self.fast += 1
                ready.append(record)
            else:
                ready.append(self._prepare_fully(record))
        return ready

    def _prepare_fully(self, record: SpanRecord) -> SpanRecord | None:
        try:
            changed = clean_span(record, shorten=False)
            if self.redactor is not None:
                record = self.redactor.span(record)
            changed = fit_names(record) or changed  # redacted, then shortened: a secret at the cut is still found
            if changed and self.limits is not None:
                self.limits.count("spans_cleaned")
            return self.limits.clip(record) if self.limits is not None else record
        except Exception:  # never stored unredacted
            logger.exception("toolpath: span %s/%s quarantined: it cannot be redacted", record.trace_id, record.span_id)
            if self.limits is not None:
                self.limits.count("spans_quarantined")
            return None

    def _text_unchanged(self, texts: Iterable[str]) -> bool:
        """Whether no text of ``texts`` needs cleaning or redacting (tested joined: see the module's doc)."""
        joined = "\n".join(texts)
        return is_clean_text(joined) and (self.redactor is None or self.redactor.finds_nothing(joined))

    def _texts_if_plain(self, record: SpanRecord) -> list[str] | None:
        """The texts of ``record`` if nothing but them can make cleaning, redaction or clipping change it (``None``:
        something else may)."""
        if record.events:
            return None
        if record.start_time > MAX_TIME or (record.end_time is not None and record.end_time > MAX_TIME):
            return None
        parent = record.parent_span_id
        if parent is not None and not is_span_id(parent):
            return None
        if record.resource and record.resource is not self._plain_resource and not self._resource_plain(record):
            return None
        if not span_text_fits(record):
            return None
        texts = [record.name]
        if record.status_message:
            texts.append(record.status_message)
        if record.scope is not None:
            texts.append(record.scope)
        attributes = record.attributes
        if not self._plain_keys.issuperset(attributes) and not all(map(self._key_plain, attributes)):
            return None
        values = attributes.values()
        if set(map(type, values)) <= _ONLY_TEXT:  # the usual span: one pass in C
            texts.extend(values)
            longest = max(map(len, values), default=0)
        else:
            longest = 0
            for value in values:
                kind = value.__class__
                if kind is str:
                    texts.append(value)
                    longest = max(longest, len(value))
                elif not _plain_scalar(value, kind) and (
                    kind is not list or not all(_plain_item(item, texts) for item in value)
                ):
                    return None
        limit = self.limits.max_attribute_length if self.limits is not None else None
        if limit is not None and longest > limit:
            return None
        return texts

    def _key_plain(self, key: str) -> bool:
        if key in self._plain_keys:
            return True
        plain = is_clean_text(key) and (self.redactor is None or self.redactor.plain_key(key))
        if plain and len(self._plain_keys) < _PLAIN_KEYS_KEPT:
            self._plain_keys.add(key)
        return plain

    def _resource_plain(self, record: SpanRecord) -> bool:
        resource = record.resource
        if clean_value(resource)[1]:
            return False
        if self.redactor is not None and self.redactor.attributes(resource) != resource:
            return False
        self._plain_resource = resource
        return True


def _plain_scalar(value: Any, kind: type) -> bool:
    if kind is int:
        return -_SMALL_INT < value < _SMALL_INT
    if kind is bool or value is None:
        return True
    return kind is float and math.isfinite(value)


def _plain_item(item: Any, texts: list[str]) -> bool:
    kind = item.__class__
    if kind is str:
        texts.append(item)
        return True
    return _plain_scalar(item, kind)
