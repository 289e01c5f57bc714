"""A serving process's heap settings: start-up objects frozen out of collections, young collections less often."""

from __future__ import annotations

import gc

from toolpath.collector.heap import YOUNG_THRESHOLD, settle_heap


def test_settle_heap_freezes_start_up_and_spaces_young_collections():
    before = gc.get_threshold()
    kept = [object() for _ in range(10)]
    try:
        settle_heap()
        assert gc.get_freeze_count() >= len(kept)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        garbage: list = []
        garbage.append(garbage)  # a cycle made after start-up is still collected
        del garbage
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
