"""The garbage collector's settings for a long-running collector process.

CPython's cycle collector scans every tracked object of a generation when it runs: a collector worker holds some
80,000 objects from start-up (modules, the web app, SQLAlchemy's metadata) that are never garbage, and every
full collection walked them all (50-60 ms with the interpreter held, a dozen times a minute under load, some 14%
of a worker's CPU with online scoring on). Ingest and scoring allocate in bursts (an export's spans, a batch of
invocations) that survive until the request ends, so young collections ran every 700 allocations and promoted
the burst, which is what brought full collections on.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
"""Allocations between young collections (CPython's default: 700): a request's burst is freed by reference
counting before a collection would find it; cycles still go, a little later."""


def settle_heap() -> None:
    """Freeze what start-up made (kept out of every later collection) and collect the young generation less often.
    Called once the service is up, in each process that serves."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
